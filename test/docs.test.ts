import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decisionRecords, readRecord, refreshDecisions } from '../bench/decisions.mjs';

// Keeps DESIGN.md and the decision records true to what they cite: every `DESIGN.md, "Section"` names a heading,
// every record names a bench results file, and every evidence line's value is the one in that file.
// `npm run bench` refreshes the quoted values (bench/decisions.mjs); a results file changed by hand fails here.

const root = join(import.meta.dirname, '..');
const decisionsDir = join(root, 'docs', 'decisions');
const resultsDir = join(root, 'bench', 'results');
const records = decisionRecords(decisionsDir);

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

      const { evidence, stale, unreadable } = readRecord(path, resultsDir);
      expect(evidence.length).toBeGreaterThan(0);
      expect(unreadable).toEqual([]);
      expect(stale).toEqual([]);
    });
  }

  it('are refreshed from new results by the bench run, naming each moved value', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-decisions-'));
    const [decisions, results] = [join(dir, 'decisions'), join(dir, 'results')];
    mkdirSync(decisions);
    mkdirSync(results);
    const line = (value: string) => `- \`bench/results/x.json\` · \`tables[0].rows[1][2]\` (recall@10) = \`${value}\``;
    writeFileSync(join(decisions, '0001-x.md'), `# 0001. X\n\n${line('0.5')}\n`);
    writeFileSync(join(results, 'x.json'), JSON.stringify({ tables: [{ rows: [[], ['a', 'b', 0.625]] }] }));

    expect(refreshDecisions(decisions, results)).toEqual([{ record: '0001-x.md', stale: ['x.json tables[0].rows[1][2] (recall@10): quoted 0.5, the file holds 0.625'] }]);
    expect(readFileSync(join(decisions, '0001-x.md'), 'utf8')).toBe(`# 0001. X\n\n${line('0.625')}\n`);
    expect(refreshDecisions(decisions, results)).toEqual([]);
  });
});
