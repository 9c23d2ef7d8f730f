import { setImmediate as nextTurn } from 'node:timers/promises';
import { Jieba } from '@node-rs/jieba';
import { dict } from '@node-rs/jieba/dict.js';
import snowball from 'snowball-stemmers';
import { CHINESE_STOPWORDS, ENGLISH_STOPWORDS } from './stopwords.js';

/**
 * Text analysis shared by the index and query sides (see DESIGN.md, "Text analysis").
 * Han runs are segmented by jieba `cutForSearch`; kana runs become character bigrams; every other
 * run of letters and digits is a word: NFKD-folded, diacritics stripped, lower-cased, stop words
 * dropped, then stemmed with Snowball English (Porter2).
 */

// Han ideographs | kana | any other run of letters, marks and digits.
const RUN_PATTERN = /(\p{Script=Han}+)|([\p{Script=Hiragana}\p{Script=Katakana}ー]+)|([\p{L}\p{M}\p{N}]+)/gu;
const MARKS = /\p{M}+/gu;
const HAS_WORD_CHAR = /[\p{L}\p{N}]/u;
// Anything but printable ASCII, tab and newlines sends the text down the general (Unicode) path.
const NOT_PLAIN_ASCII = /[^\t\n\r -~]/;
const LATIN_WORD = /^[a-z]+$/;
const HAS_DIGIT = /\d/;

let jieba: Jieba | undefined;
function segmenter(): Jieba {
  jieba ??= Jieba.withDict(dict);
  return jieba;
}

/**
 * Loads jieba's dictionary now (~150 ms, ~40 MB) rather than when the first Chinese text or slot probe is
 * analysed: a server does it before it listens, so that first use does not stall its requests.
 */
export function prepareAnalyzer(): void {
  segmenter();
}

/** True once jieba's dictionary is loaded ({@link prepareAnalyzer}, or the first Chinese text). */
export function analyzerPrepared(): boolean {
  return jieba !== undefined;
}

const stemmer = snowball.newStemmer('english');
// Word handling (stop-word check and stemming) dominates analysis cost; a store's vocabulary is small
// enough to cache the default pipeline's answer per folded word ('' = dropped).
const termCache = new Map<string, string>();
const TERM_CACHE_LIMIT = 200_000;

/** Options for {@link analyze}. */
export type AnalyzeOptions = {
  /** Apply Porter2 stemming to Latin-script words (default true). */
  stem?: boolean;
  /** Drop English and Chinese stop words (default true). */
  dropStopwords?: boolean;
};

/** Lower-cased, diacritic-free form of a word run, or '' when nothing is left. */
export function foldWord(run: string): string {
  return run.normalize('NFKD').replace(MARKS, '').toLowerCase();
}

/** Split `text` into search tokens, in order, duplicates kept. */
export function analyze(text: string, options: AnalyzeOptions = {}): string[] {
  const doStem = options.stem ?? true;
  const dropStop = options.dropStopwords ?? true;
  const tokens: string[] = [];
  const addWord = (folded: string): void => {
    const token = doStem && dropStop ? cachedTerm(folded) : wordTerm(folded, doStem, dropStop);
    if (token !== '') tokens.push(token);
  };
  if (!NOT_PLAIN_ASCII.test(text)) {
    // Fast path for plain ASCII: NFKC and NFKD leave it unchanged and the word runs of RUN_PATTERN are
    // exactly the runs of [a-z0-9] once lower-cased.
    scanAsciiWords(text.toLowerCase(), addWord);
    return tokens;
  }
  for (const match of text.normalize('NFKC').matchAll(RUN_PATTERN)) {
    const [, han, kana, word] = match;
    if (han !== undefined) {
      for (const piece of segmenter().cutForSearch(han, true)) {
        if (!HAS_WORD_CHAR.test(piece)) continue;
        if (dropStop && CHINESE_STOPWORDS.has(piece)) continue;
        tokens.push(piece);
      }
    } else if (kana !== undefined) {
      if (kana.length === 1) tokens.push(kana);
      for (let i = 0; i + 1 < kana.length; i++) tokens.push(kana.slice(i, i + 2));
    } else if (word !== undefined) {
      addWord(foldWord(word));
    }
  }
  return tokens;
}

/** The analysed form stored in a keyword index column: tokens joined by single spaces. */
export function analyzeForIndex(text: string): string {
  return analyze(text).join(' ');
}

/** Characters analysed between two turns of the event loop by {@link analyzeEachForIndex} (~5 ms of work). */
export const ANALYZE_YIELD_CHARS = 64 * 1024;

/**
 * {@link analyzeForIndex} of each text, giving the event loop a turn every {@link ANALYZE_YIELD_CHARS}:
 * the analysis costs ~50 ms per MB, so a batch of large messages (an import) analysed in one go would
 * keep a server from answering anyone for its whole length.
 */
export async function analyzeEachForIndex(texts: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  let sinceYield = 0;
  for (const text of texts) {
    if (sinceYield >= ANALYZE_YIELD_CHARS) {
      await nextTurn();
      sinceYield = 0;
    }
    sinceYield += text.length;
    out.push(analyzeForIndex(text));
  }
  return out;
}

/** The token for one folded word, or '' when it is dropped. */
function wordTerm(folded: string, doStem: boolean, dropStop: boolean): string {
  if (folded === '' || (dropStop && ENGLISH_STOPWORDS.has(folded))) return '';
  // A lone Latin letter says nothing; a lone digit ("5 cats") may.
  if (folded.length === 1 && !HAS_DIGIT.test(folded)) return '';
  return doStem && LATIN_WORD.test(folded) ? stemmer.stem(folded) : folded;
}

function cachedTerm(folded: string): string {
  let token = termCache.get(folded);
  if (token === undefined) {
    token = wordTerm(folded, true, true);
    if (termCache.size >= TERM_CACHE_LIMIT) termCache.clear();
    termCache.set(folded, token);
  }
  return token;
}

/** Calls `onWord` for every maximal run of [a-z0-9] in lower-cased ASCII `text`. */
function scanAsciiWords(text: string, onWord: (word: string) => void): void {
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 0;
    const wordChar = (c >= 97 && c <= 122) || (c >= 48 && c <= 57);
    if (wordChar) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      onWord(text.slice(start, i));
      start = -1;
    }
  }
}
