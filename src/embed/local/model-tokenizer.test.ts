import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bertTokenizerJson, bertVocabulary } from '../../../bench/model-files.mjs';
import { AsciiWordPiece, loadModelTokenizer } from './model-tokenizer.js';

const words = 'the quick brown fox jumps over lazy dog running runs ran i am vegetarian and love thai food what do eat'.split(' ');
const json = bertTokenizerJson(bertVocabulary(words, 400));
const library = new Tokenizer(json, {});
const fast = AsciiWordPiece.from(json as Parameters<typeof AsciiWordPiece.from>[0])!;
const ids = (text: string): number[] => library.encode(text, { add_special_tokens: false }).ids;

describe('AsciiWordPiece', () => {
  it('gives the ids the tokenizers library gives, on any printable or control ASCII text', () => {
    const ascii = fc.string({ unit: fc.integer({ min: 0, max: 127 }).map((c) => String.fromCharCode(c)), maxLength: 80 });
    const wordy = fc.array(fc.constantFrom(...words, 'Fox', 'RUNNING', 'jumped!', "don't", 'e-mail', '42', 'x'.repeat(120), '\t', '\n'), { maxLength: 20 }).map((w) => w.join(' '));
    let compared = 0;
    fc.assert(
      fc.property(fc.oneof(ascii, wordy), (text) => {
        const mine = fast.encode(text, 10_000);
        if (mine === null) return;
        compared++;
        expect(mine).toEqual(ids(text));
      }),
      { numRuns: 2_000 },
    );
    // ASCII text without a typed special token always takes the fast path.
    expect(compared).toBe(2_000);
  });

  it('leaves non-ASCII text and typed special tokens to the library, and stops at the token limit', () => {
    expect(fast.encode('café au lait', 100)).toBeNull();
    expect(fast.encode('hello [CLS] world', 100)).toBeNull();
    expect(fast.encode('the quick brown fox jumps', 3)).toEqual(ids('the quick brown fox jumps').slice(0, 3));
  });
});

describe('loadModelTokenizer', () => {
  it('encodes as the library does, with special tokens and cuts that keep the closing one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-tokenizer-'));
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(json));
    const tokenizer = loadModelTokenizer(dir);
    for (const text of ['I am vegetarian', 'Café crème, s’il vous plaît', '我喜欢泰国菜', 'the quick brown fox']) {
      expect(tokenizer.encode(text, 512, false)).toEqual(ids(text));
      expect(tokenizer.encode(text, 512, true)).toEqual(library.encode(text, { add_special_tokens: true }).ids);
    }
    const cut = tokenizer.encode('the quick brown fox jumps over the lazy dog', 4, true);
    expect(cut).toHaveLength(4);
    expect(cut[0]).toBe(101);
    expect(cut[3]).toBe(102);
  });
});
