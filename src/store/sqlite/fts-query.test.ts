import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { analyze, analyzeForIndex } from '../../text/analyze.js';
import { MAX_QUERY_TERMS } from '../../text/query-bounds.js';
import { buildFtsQuery } from './fts-query.js';

// The same table definition as the store's keyword indexes.
const db = new Database(':memory:');
db.exec(`CREATE VIRTUAL TABLE docs USING fts5 (terms, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 0')`);
const insert = db.prepare('INSERT INTO docs (rowid, terms) VALUES (?, ?)');
[
  'Caroline went to the LGBTQ support group yesterday',
  'Melanie painted a sunrise over the lake',
  'The support group met in the library',
  'Caroline is painting a portrait',
  '我们今天去北京大学参观了图书馆',
  'Near the column, a star * appeared (quoted "text")',
].forEach((text, i) => insert.run(i + 1, analyzeForIndex(text)));
const search = db.prepare('SELECT rowid AS id FROM docs WHERE docs MATCH ? ORDER BY rowid');
afterAll(() => db.close());

function run(match: string): number[] {
  return (search.all(match) as { id: number }[]).map((r) => r.id);
}

describe('buildFtsQuery', () => {
  it('returns null when there is nothing to search', () => {
    expect(buildFtsQuery([])).toBeNull();
    expect(buildFtsQuery(['', ''])).toBeNull();
    expect(buildFtsQuery(analyze('the of and ?!'))).toBeNull();
  });

  it('quotes each distinct token and ORs them', () => {
    expect(buildFtsQuery(['cat'])).toBe('"cat"');
    expect(buildFtsQuery(['cat', 'dog', 'cat'])).toBe('"cat" OR "dog"');
  });

  it('doubles embedded quotes and drops NUL characters', () => {
    expect(buildFtsQuery(['a"b'])).toBe('"a""b"');
    expect(buildFtsQuery(['a\u0000b', '\u0000'])).toBe('"ab"');
  });

  it('uses at most MAX_QUERY_TERMS terms however many the query has', () => {
    const match = buildFtsQuery(Array.from({ length: 5_000 }, (_, i) => `w${i}`))!;
    const quoted = new Set(match.match(/"[^"]+"/g));
    expect(quoted.size).toBe(MAX_QUERY_TERMS);
    expect(quoted.has('"w0"') && quoted.has(`"w${MAX_QUERY_TERMS - 1}"`)).toBe(true);
  });

  it('finds every row holding any token', () => {
    expect(run(buildFtsQuery(analyze('Which support group did Caroline go to?'))!)).toEqual([1, 3, 4]);
  });

  it('finds a Chinese row by a Chinese query', () => {
    expect(run(buildFtsQuery(analyze('北京的图书馆'))!)).toEqual([5]);
  });

  it('keeps FTS5 syntax in user text inert', () => {
    for (const hostile of ['NEAR(column star, 2)', 'terms:star', '"text', 'star*', '-column', '(quoted) AND OR NOT']) {
      const match = buildFtsQuery(analyze(hostile));
      expect(match).not.toBeNull();
      expect(() => run(match!)).not.toThrow();
    }
  });

  it('builds a valid FTS5 query from any string, or null (property)', () => {
    const hostile = fc.constantFrom('"', "'", '*', '-', '+', '^', ':', '(', ')', '{', '}', 'NEAR', 'NEAR(', 'AND', 'OR', 'NOT', 'terms:', 'col:', ',', ' ');
    const text = fc.array(fc.oneof(hostile, fc.string({ unit: 'grapheme', maxLength: 8 }), fc.string({ unit: 'binary', maxLength: 8 })), { maxLength: 12 });
    fc.assert(
      fc.property(text, (parts) => {
        const match = buildFtsQuery(analyze(parts.join('')));
        if (match === null) return;
        expect(() => run(match)).not.toThrow();
      }),
      { numRuns: 500 },
    );
  });

  it('builds a valid FTS5 query from any token list, even unanalysed (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary', maxLength: 10 }), { maxLength: 12 }), (tokens) => {
        const match = buildFtsQuery(tokens);
        if (match === null) expect(tokens.every((t) => t.replaceAll('\u0000', '') === '')).toBe(true);
        else expect(() => run(match)).not.toThrow();
      }),
      { numRuns: 500 },
    );
  });
});
