import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { CairnError, describeError } from '../../errors.js';

/** Turns text into a model's token ids, as its `tokenizer.json` defines them. */
export interface ModelTokenizer {
  /** Size of the vocabulary (every id is below it). */
  readonly vocabularySize: number;
  /** The unknown token's id, or null when the vocabulary has none. */
  readonly unknownId: number | null;
  /**
   * Token ids of `text`, at most `maxTokens`. With `special`, the model's special tokens are added (a
   * BERT model's `[CLS] … [SEP]`) and the last one is kept when the text is cut.
   */
  encode(text: string, maxTokens: number, special: boolean): number[];
}

/** What Cairn reads of a `tokenizer.json` to decide whether its own WordPiece path applies. */
type TokenizerJson = {
  normalizer?: { type?: string; clean_text?: boolean; handle_chinese_chars?: boolean; strip_accents?: boolean | null; lowercase?: boolean } | null;
  pre_tokenizer?: { type?: string } | null;
  model?: { type?: string; vocab?: Record<string, number> | unknown[]; unk_token?: string; continuing_subword_prefix?: string; max_input_chars_per_word?: number };
  added_tokens?: { id: number; content: string }[];
};

/**
 * Loads `<dir>/tokenizer.json` (and `tokenizer_config.json` beside it, when present) with the maintained
 * tokenizers library (`@huggingface/tokenizers`), which reads every tokenizer the Hub's models ship
 * (WordPiece, BPE, Unigram). Texts a BERT WordPiece tokenizer would see as plain ASCII take Cairn's own
 * path instead ({@link AsciiWordPiece}): the same ids, several times faster, which is what lets a static
 * model embed tens of thousands of texts a second (DESIGN.md, "Local models"). A file that is missing, not
 * JSON, or that the library cannot load is a `config_invalid` error naming it.
 */
export function loadModelTokenizer(dir: string): ModelTokenizer {
  const path = join(dir, 'tokenizer.json');
  if (!existsSync(path)) throw new CairnError('config_invalid', `the model folder ${dir} has no tokenizer.json`);
  let json: TokenizerJson;
  try {
    json = JSON.parse(readFileSync(path, 'utf8')) as TokenizerJson;
  } catch (err) {
    throw new CairnError('config_invalid', `${path} is not JSON: ${describeError(err)}`);
  }
  const configPath = join(dir, 'tokenizer_config.json');
  let config: object = {};
  if (existsSync(configPath)) {
    try {
      config = JSON.parse(readFileSync(configPath, 'utf8')) as object;
    } catch (err) {
      throw new CairnError('config_invalid', `${configPath} is not JSON: ${describeError(err)}`);
    }
  }
  let library: Tokenizer;
  try {
    library = new Tokenizer(json, config);
    library.encode('a', { add_special_tokens: false });
  } catch (err) {
    throw new CairnError('config_invalid', `Cairn cannot load the tokenizer ${path}: ${describeError(err)}`);
  }
  let vocabularySize = 0;
  for (const id of library.get_vocab().values()) if (id >= vocabularySize) vocabularySize = id + 1;
  const unknownName = json.model?.unk_token;
  const unknownId = unknownName === undefined ? null : (library.token_to_id(unknownName) ?? null);
  const fast = AsciiWordPiece.from(json);
  return {
    vocabularySize,
    unknownId,
    encode(text, maxTokens, special) {
      const ids = fast !== null && !special ? fast.encode(text, maxTokens) : null;
      if (ids !== null) return ids;
      const all = library.encode(text, { add_special_tokens: special }).ids;
      if (all.length <= maxTokens) return all;
      // Cut the text, keep the closing special token (BERT's [SEP], RoBERTa's </s>).
      return special ? [...all.slice(0, maxTokens - 1), all[all.length - 1]!] : all.slice(0, maxTokens);
    },
  };
}

/**
 * BERT's tokenization (BertNormalizer, BertPreTokenizer, WordPiece) for texts of printable ASCII, in one
 * pass over the text: control characters dropped, whitespace splits, each ASCII punctuation mark is a
 * word of its own, letters lower-cased when the normalizer says so, then greedy longest-match WordPiece
 * with the continuation prefix; a word with a piece the vocabulary lacks, or longer than
 * `max_input_chars_per_word`, is the unknown token. A text holding any other character, or an added
 * token's text (`[CLS]` typed in a message), answers null and goes to the library, so the ids are always
 * the library's (tested on real and random text).
 */
export class AsciiWordPiece {
  private constructor(
    private readonly vocab: Map<string, number>,
    private readonly unknownId: number,
    private readonly prefix: string,
    private readonly maxWordChars: number,
    private readonly lowercase: boolean,
    private readonly addedTexts: readonly string[],
  ) {}

  /** The fast path for a tokenizer of this shape, or null when its normalizer, pre-tokenizer or model differ. */
  static from(json: TokenizerJson): AsciiWordPiece | null {
    const n = json.normalizer;
    const model = json.model;
    if (n?.type !== 'BertNormalizer' || json.pre_tokenizer?.type !== 'BertPreTokenizer' || model?.type !== 'WordPiece') return null;
    if (n.clean_text === false || model.vocab === undefined || Array.isArray(model.vocab) || model.unk_token === undefined) return null;
    const vocab = new Map(Object.entries(model.vocab));
    const unknownId = vocab.get(model.unk_token);
    if (unknownId === undefined) return null;
    const added = (json.added_tokens ?? []).map((t) => t.content).filter((c) => c !== '');
    return new AsciiWordPiece(vocab, unknownId, model.continuing_subword_prefix ?? '##', model.max_input_chars_per_word ?? 100, n.lowercase !== false, added);
  }

  /** The ids of `text` without special tokens, at most `maxTokens`; null when the text is not for this path. */
  encode(text: string, maxTokens: number): number[] | null {
    for (const added of this.addedTexts) if (text.includes(added)) return null;
    const ids: number[] = [];
    let word = '';
    const flush = (): void => {
      if (word !== '') this.wordPieces(word, ids);
      word = '';
    };
    for (let i = 0; i < text.length && ids.length < maxTokens; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0x80) return null;
      if (c === 9 || c === 10 || c === 13 || c === 32) {
        flush();
      } else if (c < 0x20 || c === 0x7f) {
        // Control characters vanish without splitting the word around them.
      } else if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) {
        flush();
        this.wordPieces(text[i]!, ids);
      } else {
        word += this.lowercase && c >= 65 && c <= 90 ? String.fromCharCode(c + 32) : text[i]!;
      }
    }
    flush();
    return ids.length > maxTokens ? ids.slice(0, maxTokens) : ids;
  }

  private wordPieces(word: string, out: number[]): void {
    const whole = this.vocab.get(word);
    if (whole !== undefined) {
      out.push(whole);
      return;
    }
    if (word.length > this.maxWordChars) {
      out.push(this.unknownId);
      return;
    }
    const start = out.length;
    let from = 0;
    while (from < word.length) {
      let to = word.length;
      let id: number | undefined;
      for (; to > from; to--) {
        id = this.vocab.get(from === 0 ? word.slice(0, to) : this.prefix + word.slice(from, to));
        if (id !== undefined) break;
      }
      if (id === undefined) {
        out.length = start;
        out.push(this.unknownId);
        return;
      }
      out.push(id);
      from = to;
    }
  }
}
