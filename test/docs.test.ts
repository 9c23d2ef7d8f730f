import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// Keeps DESIGN.md and the decision records true to what they cite: every `DESIGN.md, "Section"` names a heading,
// every record names a bench results file, and every evidence line's value is the one in that file.
// UPDATE_DECISIONS=1 rewrites the quoted values from the results files (after a bench run), as `vitest -u` does.

const root = join(import.meta.dirname, '..');
const decisionsDir = join(root, 'docs', 'decisions');
const records = readdirSync(decisionsDir).filter((f) => /^\d{4}-[a-z0-9-]+\.md$/.test(f)).sort();

function headings(markdown: string): Set<string> {
  return new Set([...markdown.matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1]!.trim()));
}

function filesUnder(dir: string, ending: RegExp): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : filesUnder(path, ending);
    return ending.test(entry.name) ? [path] : [];
  });
}

/** Section names cited as `DESIGN.md, "A"` (or `DESIGN.md ("A", "B")`), comment continuations joined. */
function citedSections(text: string): string[] {
  const joined = text.replace(/\\"/g, '"').replace(/\n\s*(?:\*(?!\/)|\/\/)?\s*/g, ' ');
  const names: string[] = [];
  for (const m of joined.matchAll(/DESIGN\.md,?\s*\(?\s*"([^"]+)"((?:,\s*"[^"]+")*)/g)) {
    names.push(m[1]!, ...[...m[2]!.matchAll(/"([^"]+)"/g)].map((n) => n[1]!));
  }
  return names;
}

/** Evidence lines: `bench/results/X.json` · `path` (what) = `value`. */
const EVIDENCE = /`bench\/results\/([a-z0-9-]+\.json)` · `([^`]+)` \((.*)\) = `([^`]*)`/g;

function valueAt(document: unknown, path: string): unknown {
  return path
    .split(/[.[\]]/)
    .filter((key) => key !== '')
    .reduce<unknown>((value, key) => (value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined), document);
}

const results = new Map<string, unknown>();
function resultsFile(name: string): unknown {
  if (!results.has(name)) results.set(name, JSON.parse(readFileSync(join(root, 'bench', 'results', name), 'utf8')));
  return results.get(name);
}

describe('DESIGN.md', () => {
  const design = readFileSync(join(root, 'DESIGN.md'), 'utf8');
  const sections = headings(design);

  it('has every section that code, tests, benches and docs cite', () => {
    const sources = [
      ...filesUnder(join(root, 'src'), /\.ts$/),
      ...filesUnder(join(root, 'test'), /\.(ts|mjs)$/).filter((file) => file !== import.meta.filename),
      ...filesUnder(join(root, 'bench'), /\.(mjs|json)$/),
      ...['README.md', 'RELIABILITY.md', 'BENCHMARKS.md'].map((f) => join(root, f)),
    ];
    const missing = sources.flatMap((file) =>
      citedSections(readFileSync(file, 'utf8'))
        .filter((name) => !sections.has(name))
        .map((name) => `${relative(root, file)}: "${name}"`),
    );
    expect(sources.length).toBeGreaterThan(100);
    expect([...new Set(missing)]).toEqual([]);
  });

  it('cites only decision records that exist', () => {
    const cited = [...design.matchAll(/\b(?:decision |\()(00\d\d)\b/g)].map((m) => m[1]!);
    expect(cited.length).toBeGreaterThan(5);
    const numbers = new Set(records.map((f) => f.slice(0, 4)));
    expect(cited.filter((n) => !numbers.has(n))).toEqual([]);
  });

  it('stays a design, not a notebook', () => {
    expect(design.split('\n').length).toBeLessThanOrEqual(600);
  });
});

describe('decision records', () => {
  it('are indexed by docs/decisions/README.md', () => {
    const index = readFileSync(join(decisionsDir, 'README.md'), 'utf8');
    const linked = [...index.matchAll(/\]\(([^)]+\.md)\)/g)].map((m) => m[1]!);
    expect(records.length).toBeGreaterThan(0);
    expect(linked.sort()).toEqual(records);
  });

  for (const record of records) {
    it(`${record} quotes its bench results as they are`, () => {
      const path = join(decisionsDir, record);
      const text = readFileSync(path, 'utf8');
      const named = [...text.matchAll(/bench\/results\/([a-z0-9-]+\.json)/g)].map((m) => m[1]!);
      expect(named.length).toBeGreaterThan(0);
      expect(named.filter((f) => !existsSync(join(root, 'bench', 'results', f)))).toEqual([]);
      expect(text.split('\n').length).toBeLessThanOrEqual(60);

      const wrong: string[] = [];
      const updated = text.replace(EVIDENCE, (line, file: string, field: string, what: string, quoted: string) => {
        const actual = valueAt(resultsFile(file), field);
        const readable = typeof actual === 'number' || typeof actual === 'string' || typeof actual === 'boolean';
        if (readable && String(actual) === quoted) return line;
        wrong.push(`${file} ${field} (${what}): quoted ${quoted}, the file holds ${JSON.stringify(actual)}`);
        return readable ? `\`bench/results/${file}\` · \`${field}\` (${what}) = \`${String(actual)}\`` : line;
      });
      expect([...text.matchAll(EVIDENCE)].length).toBeGreaterThan(0);
      if (process.env.UPDATE_DECISIONS === '1' && updated !== text) writeFileSync(path, updated);
      else expect(wrong).toEqual([]);
    });
  }
});
