import snowball from 'snowball-stemmers';
import { addTermScores } from '../search/bm25-index.js';
import { analyze, foldWord } from '../text/analyze.js';
import { boundTerms, MAX_QUERY_TERMS } from '../text/query-bounds.js';
import { ENGLISH_STOPWORDS } from '../text/stopwords.js';
import { isRecord, topLevelProperties } from './schema.js';

/**
 * Lexical retrieval over a tool catalog (DESIGN.md, "Tool hub"): one bag of words per tool, Snowball
 * English stemming on both sides, Okapi BM25, and admission — which tools are answers at all. `served`
 * (tool_search): a keyword query (up to three content terms) keeps the reference's rarest-term rule; a
 * longer, natural-language query admits a tool that holds two of its content terms, or one distinctive
 * term. A query equal to a tool's name always returns that tool first.
 */

/** BM25 term-frequency saturation. */
export const BM25_K1 = 1.5;
/** BM25 length normalisation. */
export const BM25_B = 0.75;
/** Share of a query's answerable terms a tool must contain once the floor engages. */
export const MIN_QUERY_TERM_COVERAGE = 0.5;
/** The relevance floor engages from this many answerable (catalog-known) query terms up. */
export const MIN_ANSWERABLE_TERMS_FOR_COVERAGE = 4;
/** Served admission: a query with at most this many content terms is a keyword query (rarest-term rule). */
export const KEYWORD_QUERY_MAX_TERMS = 3;
/**
 * Served admission of a longer query: a tool holding only one of its content terms is a match when that
 * term's IDF is at least this share of the IDF of a term no tool has (a word in few tools, not an
 * incidental common one). Chosen on the tuning split of BFCL, MetaTool and Seal-Tools from the curve of
 * served recall against leave-gold-out abstention (BENCHMARKS.md, "Tool retrieval").
 */
export const DISTINCTIVE_TERM_IDF_SHARE = 0.5;

/** What the index needs to know about one tool. */
export type IndexableTool = {
  name: string;
  description: string;
  /** JSON Schema of the arguments; its top-level property names (and optionally descriptions) are indexed. */
  inputSchema?: unknown;
  /** Label of the tool's source (its server), indexed when the name does not already hold it as a word. */
  source?: string | undefined;
};

/** Tokenizer and field choices; the index and its queries always share them. */
export type ToolTextOptions = {
  /** Segment Han runs with jieba and kana into bigrams instead of dropping them. Default true. */
  cjk?: boolean;
  /** Also index the descriptions of top-level parameters. Default true. */
  paramDescriptions?: boolean;
  /** Split camelCase tool names into words (`getUserProfile` → get user profile). Default true. */
  camelCase?: boolean;
  /** Score every query token, repeats and stop words included, as the reference does (for comparison). Default false. */
  referenceScoring?: boolean;
  /** Served admission's {@link DISTINCTIVE_TERM_IDF_SHARE} (benchmarks sweep it). */
  distinctiveShare?: number;
};

/**
 * How search admits tools. `served` (tool_search, the default): see {@link ToolIndex}. `strict`: the
 * reference's rules unchanged (rarest token over every query token, half of four or more answerable
 * terms), kept for comparison. `rank`: every tool sharing a scored term, by BM25 — an ordering, not a verdict.
 */
export type Admission = 'served' | 'strict' | 'rank';

/** How a tool matched a query: its exact name, shared words, or (hybrid search only) meaning alone. */
export type MatchKind = 'exact_name' | 'keyword' | 'semantic';

/**
 * One result: a position in the indexed list, its BM25 score (`Infinity` for an exact name), how it
 * matched, and how many of the query's content terms it holds.
 */
export type ToolHit = { index: number; score: number; match: 'exact_name' | 'keyword'; terms: number };

/** Per-query search options. */
export type ToolQueryOptions = {
  /**
   * Positions to treat as absent from the catalog: not returned, and left out of document frequencies
   * (leave-gold-out evaluation: the answer as if those tools did not exist).
   */
  exclude?: ReadonlySet<number>;
};

// Han ideographs | kana | any other run of letters, marks and digits. `_ . : -` and punctuation separate.
const RUN_PATTERN = /(\p{Script=Han}+)|([\p{Script=Hiragana}\p{Script=Katakana}ー]+)|([\p{L}\p{M}\p{N}]+)/gu;
const ASCII_WORD = /^[a-z0-9]+$/;
const CAMEL_LOWER_UPPER = /(\p{Ll}|\p{N})(\p{Lu})/gu;
const CAMEL_ACRONYM = /(\p{Lu})(\p{Lu}\p{Ll})/gu;

const stemmer = snowball.newStemmer('english');
const stemCache = new Map<string, string>();
const STEM_CACHE_LIMIT = 100_000;

function stem(word: string): string {
  let stemmed = stemCache.get(word);
  if (stemmed === undefined) {
    stemmed = stemmer.stem(word);
    if (stemCache.size >= STEM_CACHE_LIMIT) stemCache.clear();
    stemCache.set(word, stemmed);
  }
  return stemmed;
}

// Stop words stay in the index and still gate and count toward the floor; they only stop scoring.
const STOP_STEMS: ReadonlySet<string> = new Set([...ENGLISH_STOPWORDS].map(stem));

/**
 * Words that phrase a request rather than name a capability ("can you help me", "I need to", "please
 * tell me"). Served admission does not count them as content terms; they still score.
 */
export const REQUEST_FILLER_WORDS: readonly string[] =
  'need want wanna help please tell know thanks thank hi hello hey hope able possible kindly wonder something anything like'.split(' ');
const FILLER_STEMS: ReadonlySet<string> = new Set(REQUEST_FILLER_WORDS.map(stem));

// British -ise spellings meet American -ize ones (summarise, summarised, organisation → -iz-).
const BRITISH_ISE = /^([a-z]{3,})is(e|ed|es|ing|er|ers|ation|ations)$/;

/**
 * Tokens of tool text or of a query, in order, duplicates kept. Latin words are lower-cased, stripped of
 * diacritics and Porter2-stemmed (`issues` → `issu`); stop words are kept. With `cjk`, Han runs are
 * segmented by jieba and kana become bigrams; without it they are dropped, as in the reference.
 */
export function toolTokens(text: string, options: ToolTextOptions = {}): string[] {
  const cjk = options.cjk ?? true;
  const tokens: string[] = [];
  if (!text) return tokens;
  for (const [, han, kana, word] of text.normalize('NFKC').matchAll(RUN_PATTERN)) {
    if (word !== undefined) {
      const folded = foldWord(word);
      if (folded !== '') tokens.push(ASCII_WORD.test(folded) ? stem(folded.replace(BRITISH_ISE, '$1iz$2')) : folded);
    } else if (cjk) {
      tokens.push(...analyze((han ?? kana)!, { stem: false, dropStopwords: false }));
    }
  }
  return tokens;
}

/**
 * The searchable text of one tool: name words (a leading `mcp__` dropped, `_ . : -` as spaces, camelCase
 * split when asked), the source label when the name does not already hold it as a word, the full
 * description, and the top-level parameter names (plus their descriptions when asked).
 */
export function toolSearchText(tool: IndexableTool, options: ToolTextOptions = {}): string {
  let nameWords = tool.name.replace(/^mcp__/, '').replace(/[_.:-]/g, ' ');
  if (options.camelCase ?? true) nameWords = nameWords.replace(CAMEL_LOWER_UPPER, '$1 $2').replace(CAMEL_ACRONYM, '$1 $2');
  const label = tool.source && !nameWords.split(/\s+/).includes(tool.source) ? tool.source : '';
  const properties = topLevelProperties(tool.inputSchema);
  const parts = [nameWords, label, tool.description, Object.keys(properties).join(' ')];
  if (options.paramDescriptions ?? true) {
    for (const p of Object.values(properties)) if (isRecord(p) && typeof p.description === 'string') parts.push(p.description);
  }
  return parts.filter((s) => s !== '').join(' ');
}

type Posting = { docs: Uint32Array; freqs: Float64Array; idf: number };

/** An immutable in-memory BM25 index over a list of tools; results are positions in that list. */
export class ToolIndex {
  readonly size: number;
  readonly options: ToolTextOptions;
  private readonly docTerms: Map<string, number>[] = [];
  /** k1 · (1 − b + b · dl / avgdl) per document, the length part of the BM25 denominator. */
  private readonly norms: Float64Array;
  private readonly postings = new Map<string, Posting>();
  private readonly byName = new Map<string, number[]>();

  constructor(tools: readonly IndexableTool[], options: ToolTextOptions = {}) {
    this.options = options;
    this.size = tools.length;
    const lengths = new Float64Array(tools.length);
    const lists = new Map<string, { docs: number[]; freqs: number[] }>();
    tools.forEach((tool, i) => {
      const tokens = toolTokens(toolSearchText(tool, options), options);
      const tf = new Map<string, number>();
      for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
      this.docTerms.push(tf);
      lengths[i] = tokens.length;
      for (const [t, f] of tf) {
        let list = lists.get(t);
        if (!list) lists.set(t, (list = { docs: [], freqs: [] }));
        list.docs.push(i);
        list.freqs.push(f);
      }
      const key = tool.name.toLowerCase();
      const same = this.byName.get(key);
      if (same) same.push(i);
      else this.byName.set(key, [i]);
    });
    const avg = tools.length > 0 ? lengths.reduce((a, b) => a + b, 0) / tools.length : 0;
    this.norms = lengths.map((dl) => BM25_K1 * (1 - BM25_B + (BM25_B * dl) / Math.max(avg, 1)));
    for (const [t, list] of lists) {
      this.postings.set(t, { docs: Uint32Array.from(list.docs), freqs: Float64Array.from(list.freqs), idf: this.idfOf(list.docs.length) });
    }
  }

  /** Number of tools containing `token`. */
  docFreq(token: string): number {
    return this.postings.get(token)?.docs.length ?? 0;
  }

  /** ln(1 + (N − df + 0.5) / (df + 0.5)): always positive, largest for a token no tool has. */
  idf(token: string): number {
    return this.postings.get(token)?.idf ?? this.idfOf(0);
  }

  /** Query tokens, analysed exactly as the tools were. */
  tokens(query: string): string[] {
    return toolTokens(query, this.options);
  }

  /** Positions of the best `limit` tools for `query`, best first; equal scores keep catalog order. */
  search(query: string, limit: number, admission: Admission = 'served'): number[] {
    return this.scored(query, limit, admission).map((hit) => hit.index);
  }

  /**
   * The best `limit` hits for `query` with their scores. An exact (case-insensitive) tool name always
   * matches and ranks first; otherwise `admission` decides which tools are results.
   */
  scored(query: string, limit: number, admission: Admission = 'served', options: ToolQueryOptions = {}): ToolHit[] {
    if (this.size === 0 || !(limit > 0)) return [];
    const stats = new Stats(this, options.exclude);
    const tokens = this.tokens(query);
    // A query of more than MAX_QUERY_TERMS distinct terms keeps its rarest ones (bounded work per query).
    const terms = new Set(tokens).size > MAX_QUERY_TERMS ? boundTerms(tokens, (t) => stats.df(t)) : tokens;
    if (terms.length === 0) return [];
    const exact = (this.byName.get(query.trim().toLowerCase()) ?? []).filter((i) => !stats.excluded(i));
    const scoring = this.options.referenceScoring ? terms : scoringTerms(terms);
    const content = contentTerms(terms);
    const exactSet = new Set(exact);
    let hits: ToolHit[];
    if (admission === 'rank') hits = this.ranked(scoring, stats, exactSet);
    else if (admission === 'served') {
      // Every admitted tool holds a content term, so it is among the ranked ones: one pass over the postings.
      const admitted = this.served(content, stats);
      hits = this.ranked(scoring, stats, exactSet).filter((h) => admitted[h.index] === 1 || exactSet.has(h.index));
    } else {
      hits = this.strict(terms, stats, exact).map((index) => ({ index, score: exactSet.has(index) ? Infinity : this.bm25(index, scoring, stats), match: 'keyword', terms: 0 }));
    }
    return best(hits, limit).map((hit) => ({ ...hit, match: exactSet.has(hit.index) ? 'exact_name' : 'keyword', terms: this.held(hit.index, content) }));
  }

  /**
   * Served admission. Up to {@link KEYWORD_QUERY_MAX_TERMS} content terms (a keyword query such as
   * `github create issue`): a tool must hold the rarest of them, and a term no tool has admits nothing,
   * so a missing service answers empty. More terms (a question or a request): every term no tool has is
   * left aside (names, values, phrasing), and a tool must hold two of the rest or one distinctive term.
   */
  private served(content: readonly string[], stats: Stats): Uint8Array {
    const admitted = new Uint8Array(this.size);
    if (content.length <= KEYWORD_QUERY_MAX_TERMS) {
      let gate = content[0]!;
      for (const t of content) if (stats.idf(t) > stats.idf(gate)) gate = t;
      for (const i of this.postings.get(gate)?.docs ?? []) if (!stats.excluded(i)) admitted[i] = 1;
      return admitted;
    }
    const share = this.options.distinctiveShare ?? DISTINCTIVE_TERM_IDF_SHARE;
    const held = new Uint8Array(this.size);
    for (const t of content) {
      if (stats.df(t) === 0) continue;
      const distinctive = stats.idf(t) >= share * stats.idfMax;
      for (const i of this.postings.get(t)!.docs) {
        if (held[i]! < 2) held[i]!++;
        if (distinctive || held[i] === 2) admitted[i] = 1;
      }
    }
    return admitted;
  }

  /** The gate (rarest token) and floor of the reference: tools holding the gate and enough answerable terms. */
  private strict(terms: readonly string[], stats: Stats, exact: readonly number[]): number[] {
    let gate = terms[0]!;
    for (const t of terms) if (stats.idf(t) > stats.idf(gate)) gate = t; // strict `>`: the earliest rarest token gates
    const answerable = [...new Set(terms)].filter((t) => stats.df(t) > 0);
    const required = answerable.length < MIN_ANSWERABLE_TERMS_FOR_COVERAGE ? 1 : Math.ceil(answerable.length * MIN_QUERY_TERM_COVERAGE);
    const admitted = new Set(exact);
    for (const i of this.postings.get(gate)?.docs ?? []) {
      if (stats.excluded(i)) continue;
      if (this.held(i, answerable) >= required) admitted.add(i);
    }
    return [...admitted].sort((a, b) => a - b);
  }

  /** Plain BM25 over the postings of the scoring terms: every tool with a positive score. */
  private ranked(scoring: readonly string[], stats: Stats, exact: ReadonlySet<number>): ToolHit[] {
    const scores = new Float64Array(this.size);
    for (const t of scoring) {
      const p = this.postings.get(t);
      if (p) addTermScores(scores, p, stats.idf(t), this.norms, undefined, BM25_K1);
    }
    for (const i of exact) scores[i] = Infinity;
    const hits: ToolHit[] = [];
    scores.forEach((score, index) => {
      if (score > 0 && !stats.excluded(index)) hits.push({ index, score, match: 'keyword', terms: 0 });
    });
    return hits;
  }

  /** How many of `terms` the tool at `index` holds. */
  private held(index: number, terms: readonly string[]): number {
    const tf = this.docTerms[index]!;
    let n = 0;
    for (const t of terms) if (tf.has(t)) n++;
    return n;
  }

  private bm25(index: number, scoring: readonly string[], stats: Stats): number {
    const tf = this.docTerms[index]!;
    const norm = this.norms[index]!;
    let score = 0;
    for (const t of scoring) {
      const f = tf.get(t);
      if (f !== undefined) score += (stats.idf(t) * f * (BM25_K1 + 1)) / (f + norm);
    }
    return score;
  }

  private idfOf(df: number): number {
    return Math.log(1 + (this.size - df + 0.5) / (df + 0.5));
  }

  /** @internal Documents holding `token` (for {@link Stats}). */
  postingDocs(token: string): Uint32Array | undefined {
    return this.postings.get(token)?.docs;
  }
}

/**
 * Document frequencies and IDF for one query, with the excluded tools taken out of the catalog (the
 * length normalisation keeps the full catalog's average). Without exclusions it reads the index as is.
 */
class Stats {
  private readonly n: number;
  private readonly cache = new Map<string, number>();
  readonly idfMax: number;

  constructor(
    private readonly index: ToolIndex,
    private readonly exclude: ReadonlySet<number> | undefined,
  ) {
    let n = index.size;
    if (exclude) for (const i of exclude) if (i >= 0 && i < index.size) n--;
    this.n = n;
    this.idfMax = this.idfOf(0);
  }

  excluded(i: number): boolean {
    return this.exclude?.has(i) ?? false;
  }

  df(token: string): number {
    let df = this.cache.get(token);
    if (df === undefined) {
      const docs = this.index.postingDocs(token);
      df = docs?.length ?? 0;
      if (docs && this.exclude && this.exclude.size > 0) for (const i of docs) if (this.exclude.has(i)) df--;
      this.cache.set(token, df);
    }
    return df;
  }

  idf(token: string): number {
    return this.exclude && this.exclude.size > 0 ? this.idfOf(this.df(token)) : this.index.idf(token);
  }

  private idfOf(df: number): number {
    return Math.log(1 + (this.n - df + 0.5) / (df + 0.5));
  }
}

/**
 * The `limit` highest-scoring hits, best first. Hits arrive in catalog order and ties keep it: a stable
 * sort for short lists, a bounded insertion for long ones (rank admission touches most of a catalog).
 */
function best(hits: ToolHit[], limit: number): ToolHit[] {
  if (hits.length <= limit * 4) return hits.sort((a, b) => b.score - a.score).slice(0, limit);
  const top: ToolHit[] = [];
  for (const hit of hits) {
    if (top.length === limit && hit.score <= top[limit - 1]!.score) continue;
    let at = top.length;
    while (at > 0 && top[at - 1]!.score < hit.score) at--;
    top.splice(at, 0, hit);
    if (top.length > limit) top.pop();
  }
  return top;
}

/** The distinct scoring terms without request fillers (all of them when nothing else is left): what served admission weighs. */
function contentTerms(terms: readonly string[]): string[] {
  const scoring = [...new Set(scoringTerms(terms))];
  const content = scoring.filter((t) => !FILLER_STEMS.has(t));
  return content.length > 0 ? content : scoring;
}

/**
 * The terms that score: distinct, without stop words (all distinct terms when the query is only stop
 * words). Both raise recall over scoring every query token on BFCL, MetaTool and Seal-Tools
 * (BENCHMARKS.md, "Tool retrieval"); admission still sees every token.
 */
function scoringTerms(terms: readonly string[]): string[] {
  const distinct = [...new Set(terms)];
  const content = distinct.filter((t) => !STOP_STEMS.has(t));
  return content.length > 0 ? content : distinct;
}
