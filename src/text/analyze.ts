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

let jieba: Jieba | undefined;
function segmenter(): Jieba {
  jieba ??= Jieba.withDict(dict);
  return jieba;
}

const stemmer = snowball.newStemmer('english');
// Stemming dominates analysis cost on English text; the vocabulary of a store is small enough to cache.
const stemCache = new Map<string, string>();
const STEM_CACHE_LIMIT = 200_000;

function stem(word: string): string {
  let stemmed = stemCache.get(word);
  if (stemmed === undefined) {
    stemmed = /^[a-z]+$/.test(word) ? stemmer.stem(word) : word;
    if (stemCache.size >= STEM_CACHE_LIMIT) stemCache.clear();
    stemCache.set(word, stemmed);
  }
  return stemmed;
}

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
      const folded = foldWord(word);
      if (folded === '' || (dropStop && ENGLISH_STOPWORDS.has(folded))) continue;
      // A lone Latin letter says nothing; a lone digit ("5 cats") may.
      if (folded.length === 1 && !/\d/.test(folded)) continue;
      tokens.push(doStem ? stem(folded) : folded);
    }
  }
  return tokens;
}

/** The analysed form stored in a keyword index column: tokens joined by single spaces. */
export function analyzeForIndex(text: string): string {
  return analyze(text).join(' ');
}
