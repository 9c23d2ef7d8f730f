import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyze, analyzeForIndex, foldWord } from './analyze.js';
import { CHINESE_STOPWORDS, ENGLISH_STOPWORDS } from './stopwords.js';

describe('analyze: English', () => {
  it('stems with Snowball English (Porter2)', () => {
    expect(analyze('generously')).toEqual(['generous']);
    expect(analyze('running dogs painted paintings')).toEqual(['run', 'dog', 'paint', 'paint']);
    expect(analyze('happiness')).toEqual(['happi']);
  });

  it('drops stop words, question words included', () => {
    expect(analyze('What did she do with the cats when they were here?')).toEqual(['cat']);
    expect(analyze('the and of to')).toEqual([]);
  });

  it('splits possessives and contractions and drops the leftovers', () => {
    expect(analyze("Caroline's friends")).toEqual(['carolin', 'friend']);
    expect(analyze('Caroline’s friends')).toEqual(['carolin', 'friend']);
    expect(analyze("don't won't I'm")).toEqual([]);
  });

  it('drops lone letters but keeps lone digits', () => {
    expect(analyze('a b 5 x 42')).toEqual(['5', '42']);
  });

  it('lower-cases, folds diacritics and compatibility forms', () => {
    expect(analyze('Café Zürich naïve')).toEqual(['cafe', 'zurich', 'naiv']);
    expect(analyze('ＡＢＣ１２３')).toEqual(['abc123']);
    expect(foldWord('Ÿellow')).toBe('yellow');
  });

  it('keeps other alphabets as words', () => {
    expect(analyze('Ελληνικά κείμενα')).toEqual(['ελληνικα', 'κειμενα']);
  });

  it('honours the options', () => {
    expect(analyze('The running dogs', { stem: false })).toEqual(['running', 'dogs']);
    expect(analyze('The running dogs', { dropStopwords: false })).toEqual(['the', 'run', 'dog']);
  });

  it('treats operator characters as separators', () => {
    expect(analyze('"NEAR(cats dogs)" col:fish -birds * OR')).toEqual(['near', 'cat', 'dog', 'col', 'fish', 'bird']);
  });
});

describe('analyze: CJK', () => {
  it('segments Chinese with jieba cutForSearch and drops Chinese stop words', () => {
    const tokens = analyze('我们今天去北京大学参观了图书馆的展览');
    expect(tokens).toEqual(expect.arrayContaining(['北京', '大学', '北京大学', '图书馆', '展览']));
    for (const stop of ['我们', '的', '了']) expect(tokens).not.toContain(stop);
    expect(tokens.every((t) => !CHINESE_STOPWORDS.has(t))).toBe(true);
  });

  it('turns kana runs into bigrams', () => {
    expect(analyze('カタカナ')).toEqual(['カタ', 'タカ', 'カナ']);
    expect(analyze('の')).toEqual(['の']);
    expect(analyze('東京タワー')).toEqual(['東京', 'タワ', 'ワー']);
  });

  it('handles mixed scripts in order', () => {
    expect(analyze('Tokyo 東京 trips')).toEqual(['tokyo', '東京', 'trip']);
  });
});

describe('analyze: properties', () => {
  it('gives the same tokens on the ASCII fast path as on the general path', () => {
    // A no-break space is not ASCII (so the general path runs) and NFKC turns it into a separator.
    fc.assert(
      fc.property(fc.string({ unit: 'binary-ascii', maxLength: 200 }), (text) => {
        expect(analyze(text)).toEqual(analyze(`${text}\u00a0`));
      }),
    );
  });

  it('never yields empty tokens or whitespace', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 100 }), (text) => {
        for (const token of analyze(text)) {
          expect(token).not.toBe('');
          expect(token).not.toMatch(/\s/);
        }
      }),
    );
  });

  it('drops every English stop word, whatever its case and separators', () => {
    const stopwords = [...ENGLISH_STOPWORDS];
    const word = fc.constantFrom(...stopwords).chain((w) => fc.constantFrom(w, w.toUpperCase(), w[0]!.toUpperCase() + w.slice(1)));
    const separator = fc.constantFrom(' ', ', ', '. ', '\n', ' - ', '!? ');
    fc.assert(
      fc.property(fc.array(fc.tuple(word, separator), { maxLength: 20 }), (pairs) => {
        expect(analyze(pairs.map(([w, sep]) => w + sep).join(''))).toEqual([]);
      }),
    );
  });

  it('stop words apply to words as written, not to stems: a content word whose stem is a stop word stays', () => {
    // "owned" and "willing" carry meaning; that their Porter2 stems equal stop words ("own", "will") does not drop them.
    expect(analyze('She owned it, willing or not')).toEqual(['own', 'will']);
  });

  it('stores the tokens space-joined for the index', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 100 }), (text) => {
        expect(analyzeForIndex(text)).toBe(analyze(text).join(' '));
      }),
    );
  });
});
