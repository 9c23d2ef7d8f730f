/**
 * The bench's SVG charts (bench/charts.mjs) drawn from results documents: well-formed SVG, one bar per
 * system × category with heights from the values, one point per measured size, and BENCHMARKS.md embedding
 * the files that bench/report.mjs writes.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { barChart, chartsFor } from '../bench/charts.mjs';
import { writeReport } from '../bench/report.mjs';

type Element = { name: string; attributes: Record<string, string>; text: string };

/**
 * A strict well-formedness check for the XML subset the charts use (elements, quoted attributes, the five
 * predefined entities and character references, comments): throws at the first fault; returns every
 * element in document order with the text directly inside it.
 */
function parseXml(xml: string): Element[] {
  const elements: Element[] = [];
  const stack: Element[] = [];
  const tag = /<!--[\s\S]*?-->|<\/([A-Za-z][\w:.-]*)\s*>|<([A-Za-z][\w:.-]*)((?:\s+[A-Za-z_:][\w:.-]*\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(\/?)>/y;
  const entity = /&(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/y;
  let roots = 0;
  let i = 0;
  while (i < xml.length) {
    const ch = xml[i]!;
    if (ch === '<') {
      tag.lastIndex = i;
      const m = tag.exec(xml);
      if (!m) throw new Error(`malformed markup at ${i}: ${xml.slice(i, i + 40)}`);
      i = tag.lastIndex;
      if (m[0].startsWith('<!--')) continue;
      if (m[1] !== undefined) {
        const top = stack.pop();
        if (top?.name !== m[1]) throw new Error(`</${m[1]}> closes <${top?.name ?? 'nothing'}>`);
        continue;
      }
      if (stack.length === 0 && ++roots > 1) throw new Error('more than one root element');
      const attributes: Record<string, string> = {};
      for (const a of (m[3] ?? '').matchAll(/([A-Za-z_:][\w:.-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
        if (a[1]! in attributes) throw new Error(`duplicate attribute ${a[1]} on <${m[2]}>`);
        attributes[a[1]!] = a[2] ?? a[3] ?? '';
      }
      const element = { name: m[2]!, attributes, text: '' };
      elements.push(element);
      if (m[4] !== '/') stack.push(element);
      continue;
    }
    if (ch === '&') {
      entity.lastIndex = i;
      if (!entity.test(xml)) throw new Error(`bare & at ${i}`);
    } else if (stack.length === 0 && !/\s/.test(ch)) throw new Error(`text outside the root element at ${i}`);
    if (stack.length > 0) stack.at(-1)!.text += ch;
    i++;
  }
  if (stack.length > 0) throw new Error(`<${stack.at(-1)!.name}> is not closed`);
  if (roots !== 1) throw new Error('no root element');
  return elements;
}

const CATEGORY_KEYS = ['4', '2', '1', '3'];

/** A LoCoMo results document as bench/locomo.mjs writes it, with the values given. */
function locomoResult(systems: { label: string; recall: number[] }[]) {
  return {
    name: 'locomo',
    title: 'LoCoMo turn-level evidence retrieval',
    systems: systems.map((s) => ({
      label: s.label,
      categories: Object.fromEntries([...CATEGORY_KEYS.map((key, i) => [key, { n: 10, 'recall@10': s.recall[i] }]), ['5', { n: 10, 'recall@10': 0.01 }]]),
    })),
    tables: [],
  };
}

describe('bench charts', () => {
  it('checks well-formedness strictly enough to fail', () => {
    expect(() => parseXml('<svg><g></svg>')).toThrow(/closes <g>/);
    expect(() => parseXml('<svg><text>a & b</text></svg>')).toThrow(/bare &/);
    expect(() => parseXml('<svg x=1></svg>')).toThrow(/malformed/);
    expect(() => parseXml('<svg/><svg/>')).toThrow(/more than one root/);
  });

  it('draws one bar per system × category of a LoCoMo results document, heights from the values', () => {
    const systems = [
      { label: 'BM25 <baseline> & "stop words"', recall: [0.5, 0.25, 0.1, 0.3] },
      { label: 'Cairn, keyword only', recall: [1, 0.75, 0.4, 0.2] },
      { label: 'Cairn, hybrid', recall: [0.8, 0.6, 0.35, 0.45] },
    ];
    const [chart, ...more] = chartsFor(locomoResult(systems));
    expect(more).toEqual([]);
    expect(chart!.file).toBe('locomo-recall-by-category.svg');
    const elements = parseXml(chart!.svg);
    expect(elements[0]!.name).toBe('svg');
    expect(elements[0]!.attributes.xmlns).toBe('http://www.w3.org/2000/svg');
    const bars = elements.filter((e) => e.name === 'rect' && e.attributes.class === 'bar');
    expect(bars).toHaveLength(systems.length * CATEGORY_KEYS.length);
    const titles = elements.filter((e) => e.name === 'title').map((e) => e.text);
    const height = (system: number, category: number) => {
      const label = ['single-hop', 'temporal', 'multi-hop', 'open-domain'][category]!;
      const name = systems[system]!.label.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
      const index = titles.indexOf(`${name}, ${label}: ${systems[system]!.recall[category]}`) - 1;
      expect(index).toBeGreaterThanOrEqual(0);
      return Number(bars[index]!.attributes.height);
    };
    // recall 1 fills the axis (yMax 1); 0.5 is half of it, 0.25 a quarter.
    expect(height(0, 0) / height(1, 0)).toBeCloseTo(0.5, 2);
    expect(height(0, 1) / height(1, 0)).toBeCloseTo(0.25, 2);
    // The legend names every system, escaped.
    const legend = elements.filter((e) => e.name === 'text').map((e) => e.text);
    for (const s of systems) expect(legend).toContain(s.label.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;'));
  });

  it('draws nothing for a missing value and no chart without values', () => {
    const svg = barChart({ title: 't', yLabel: 'y', categories: ['a', 'b'], series: [{ name: 's', values: [0.5, null] }] });
    expect(parseXml(svg).filter((e) => e.attributes.class === 'bar')).toHaveLength(1);
    expect(chartsFor({ name: 'soak' })).toEqual([]);
  });

  it('plots latency against corpus size for each engine and search of a PostgreSQL results document', () => {
    const rows = ['SQLite', 'PostgreSQL'].flatMap((backend, b) =>
      ['keyword', 'hybrid'].flatMap((config, c) => [10_000, 100_000, 1_000_000].map((size, s) => ({ backend, config, size, p95_ms: 1 + b + c * 2 + s }))),
    );
    const locomo = ['SQLite', 'PostgreSQL'].map((backend) => ({
      backend,
      config: 'keyword',
      label: 'keyword',
      categories: Object.fromEntries(['4', '2', '1', '3', '5'].map((key) => [key, { 'recall@10': 0.5 }])),
    }));
    // A configuration a backend could not serve is a row with an error and no values: it draws nothing.
    const failed = { backend: 'PostgreSQL', config: 'hybrid', label: 'hybrid', error: 'not implemented' };
    const charts = chartsFor({
      name: 'postgres',
      backends: ['SQLite', 'PostgreSQL'],
      rows: [...rows, { backend: 'PostgreSQL', config: 'hybrid', size: 2_000_000, error: 'x' }],
      locomo: [...locomo, failed],
    });
    expect(charts.map((c) => c.file)).toEqual(['postgres-locomo-recall-by-category.svg', 'postgres-latency-by-size.svg']);
    expect(parseXml(charts[0]!.svg).filter((e) => e.attributes.class === 'bar')).toHaveLength(2 * 4);
    const elements = parseXml(charts[1]!.svg);
    expect(elements.filter((e) => e.name === 'polyline')).toHaveLength(4);
    expect(elements.filter((e) => e.name === 'circle')).toHaveLength(12);
    const texts = elements.filter((e) => e.name === 'text').map((e) => e.text);
    expect(texts).toContain('messages in the scope (log scale)');
    expect(texts).toEqual(expect.arrayContaining(['10,000', '100,000', '1,000,000', 'SQLite, keyword', 'PostgreSQL, hybrid']));
    expect(texts).not.toContain('2,000,000');
  });
});

describe('bench report with charts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-report-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the charts beside the report, embeds them in their section and removes stale ones', () => {
    mkdirSync(join(dir, 'results'));
    mkdirSync(join(dir, 'bench', 'charts'), { recursive: true });
    writeFileSync(join(dir, 'bench', 'charts', 'stale.svg'), '<svg/>');
    writeFileSync(join(dir, 'results', 'locomo.json'), JSON.stringify(locomoResult([{ label: 'one', recall: [0.1, 0.2, 0.3, 0.4] }])));
    const report = join(dir, 'BENCHMARKS.md');
    expect(writeReport(join(dir, 'results'), report).charts).toEqual(['bench/charts/locomo-recall-by-category.svg']);
    const text = readFileSync(report, 'utf8');
    const section = text.slice(text.indexOf('## LoCoMo turn-level evidence retrieval'));
    expect(section).toContain('![LoCoMo turn recall@10 by question category](bench/charts/locomo-recall-by-category.svg)');
    const svg = readFileSync(join(dir, 'bench', 'charts', 'locomo-recall-by-category.svg'), 'utf8');
    expect(parseXml(svg).filter((e) => e.attributes.class === 'bar')).toHaveLength(4);
    expect(existsSync(join(dir, 'bench', 'charts', 'stale.svg'))).toBe(false);
  });
});
