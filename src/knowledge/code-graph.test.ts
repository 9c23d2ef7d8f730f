import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { globToRegExp, identifierTokens } from './code-graph.js';

describe('identifierTokens', () => {
  it('splits camelCase, PascalCase, acronyms and snake_case, stems, and keeps the whole name', () => {
    expect(identifierTokens('searchMemoriesInTurn')).toEqual(['search', 'memori', 'turn', 'searchmemoriesinturn']);
    expect(identifierTokens('HTTPServer')).toEqual(['http', 'server', 'httpserver']);
    expect(identifierTokens('max_file_bytes')).toEqual(['max', 'file', 'byte', 'maxfilebytes']);
    // A name made only of stop words is still findable.
    expect(identifierTokens('has')).toEqual(['has']);
  });

  it('gives a query the same tokens as the name it spells', () => {
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[a-z]{3,8}$/), { minLength: 1, maxLength: 4 }), (words) => {
        const camel = words.map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join('');
        const snake = words.join('_');
        expect(identifierTokens(camel)).toEqual(identifierTokens(snake));
      }),
    );
  });
});

describe('globToRegExp', () => {
  it('supports *, **, ? and {a,b}', () => {
    expect(globToRegExp('*.ts').test('a.ts')).toBe(true);
    expect(globToRegExp('*.ts').test('src/a.ts')).toBe(false);
    expect(globToRegExp('src/**/*.test.ts').test('src/a.test.ts')).toBe(true);
    expect(globToRegExp('src/**/*.test.ts').test('src/x/y/a.test.ts')).toBe(true);
    expect(globToRegExp('src/?.ts').test('src/ab.ts')).toBe(false);
    expect(globToRegExp('*.{ts,js}').test('a.js')).toBe(true);
    expect(globToRegExp('**').test('any/path/at/all')).toBe(true);
  });

  it('matches a path without glob characters only to itself', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[\w.()+$^|\\[\]-]{1,12}(\/[\w.()+$^|\\[\]-]{1,12}){0,3}$/), fc.string({ maxLength: 20 }), (path, other) => {
        const re = globToRegExp(path);
        expect(re.test(path)).toBe(true);
        if (other !== path) expect(re.test(other)).toBe(false);
      }),
    );
  });
});
