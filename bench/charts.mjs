/**
 * SVG charts of the bench results, drawn from the results documents (never from typed numbers) for
 * BENCHMARKS.md: LoCoMo recall per category for each system (bench/locomo.mjs, and SQLite beside PostgreSQL
 * from bench/postgres.mjs), and search latency against corpus size (bench/postgres.mjs, bench/speed.mjs).
 * Hand-written SVG with no dependencies: axes with ticks, labels, a legend; one file per chart.
 */

/** Categories of the LoCoMo charts, in bench/locomo.mjs's report order (category 5 is not scored overall). */
const LOCOMO_CATEGORIES = [
  { key: '4', label: 'single-hop' },
  { key: '2', label: 'temporal' },
  { key: '1', label: 'multi-hop' },
  { key: '3', label: 'open-domain' },
];

/** Colour-blind-safe palette (Okabe–Ito, then Tol's muted), cycled by series. */
const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#332288', '#882255', '#44AA99', '#999933', '#000000'];

/**
 * The charts of one results document: `[{ file, title, svg }]`, empty for a bench without charts.
 * `file` is a bare file name (for bench/charts/).
 */
export function chartsFor(result) {
  const build = CHARTS[result.name];
  return build ? build(result).filter((chart) => chart !== null) : [];
}

const CHARTS = {
  locomo: (result) => [
    chart('locomo-recall-by-category.svg', barChart, {
      title: 'LoCoMo turn recall@10 by question category',
      yLabel: 'recall@10',
      yMax: 1,
      categories: LOCOMO_CATEGORIES.map((c) => c.label),
      series: result.systems.map((s) => ({ name: s.label, values: LOCOMO_CATEGORIES.map((c) => s.categories[c.key]['recall@10']) })),
    }),
  ],
  postgres: (result) => [
    chart('postgres-locomo-recall-by-category.svg', barChart, {
      title: 'LoCoMo turn recall@10 by category, SQLite and PostgreSQL',
      yLabel: 'recall@10',
      yMax: 1,
      categories: LOCOMO_CATEGORIES.map((c) => c.label),
      series: result.locomo.filter((r) => r.categories).map((r) => ({ name: `${r.backend}, ${r.label}`, values: LOCOMO_CATEGORIES.map((c) => r.categories[c.key]['recall@10']) })),
    }),
    chart('postgres-latency-by-size.svg', lineChart, {
      title: 'conversation_search p95 against corpus size',
      xLabel: 'messages in the scope',
      yLabel: 'p95 ms',
      series: result.backends.flatMap((backend) =>
        ['keyword', 'hybrid'].map((config) => ({
          name: `${backend}, ${config}`,
          points: result.rows.filter((r) => r.backend === backend && r.config === config).map((r) => [r.size, r.p95_ms]),
        })),
      ),
    }),
  ],
  speed: (result) => {
    const systems = [...new Set(result.searches.filter((r) => r.corpus === 'realistic').map((r) => r.system))];
    return [
      chart('speed-keyword-latency-by-size.svg', lineChart, {
        title: 'Keyword conversation search p95 against corpus size (realistic corpus)',
        xLabel: 'messages in the scope',
        yLabel: 'p95 ms',
        series: systems.map((system) => ({
          name: system,
          points: result.searches.filter((r) => r.corpus === 'realistic' && r.system === system).map((r) => [r.size, r.p95_ms]),
        })),
      }),
    ];
  },
};

/** A chart entry, or null when it would have nothing to draw. */
function chart(file, draw, spec) {
  // Points without a value (a row that failed) are dropped, so they add no tick either.
  const series = spec.series
    .map((s) => (s.points ? { ...s, points: s.points.filter((p) => p[1] != null) } : s))
    .filter((s) => (s.values ?? s.points).some((v) => (Array.isArray(v) ? v[1] : v) != null));
  if (series.length === 0) return null;
  return { file, title: spec.title, svg: draw({ ...spec, series }) };
}

const FONT = 'font-family="system-ui, -apple-system, Segoe UI, sans-serif"';
const LEGEND_ROW = 18;

/**
 * Grouped bars: one group per category, one bar per series in each (a missing value draws no bar).
 * `{ title, yLabel, yMax?, categories: string[], series: [{ name, values: (number|null)[] }] }`.
 */
export function barChart({ title, yLabel, yMax, categories, series }) {
  const width = 760;
  const plot = { left: 56, top: 40, width: width - 56 - 16, height: 260 };
  const legendTop = plot.top + plot.height + 44;
  const height = legendTop + legendHeight(series, width) + 8;
  const max = yMax ?? niceMax(Math.max(...series.flatMap((s) => s.values.filter((v) => v != null))));
  const y = (v) => plot.top + plot.height - (v / max) * plot.height;
  const group = plot.width / categories.length;
  const barWidth = Math.max(2, (group * 0.8) / series.length);
  const out = [open(width, height, title), ...yAxis(plot, max, y, yLabel)];
  categories.forEach((category, c) => {
    const x0 = plot.left + c * group + group * 0.1;
    out.push(text(plot.left + c * group + group / 2, plot.top + plot.height + 18, category, 'middle'));
    series.forEach((s, i) => {
      const v = s.values[c];
      if (v == null) return;
      const x = x0 + i * barWidth;
      out.push(
        `<rect class="bar" x="${fmt(x)}" y="${fmt(y(v))}" width="${fmt(Math.max(1, barWidth - 1))}" height="${fmt(plot.top + plot.height - y(v))}" fill="${PALETTE[i % PALETTE.length]}"><title>${escape(`${s.name}, ${category}: ${v}`)}</title></rect>`,
      );
    });
  });
  out.push(line(plot.left, plot.top + plot.height, plot.left + plot.width, plot.top + plot.height, '#333'));
  out.push(...legend(series, width, legendTop, 'rect'));
  return `${out.join('\n')}\n</svg>\n`;
}

/**
 * Lines through `[x, y]` points, x on a log scale when it spans 100× or more.
 * `{ title, xLabel, yLabel, series: [{ name, points: [x, y][] }] }`.
 */
export function lineChart({ title, xLabel, yLabel, series }) {
  const width = 760;
  const plot = { left: 56, top: 40, width: width - 56 - 24, height: 260 };
  const legendTop = plot.top + plot.height + 48;
  const height = legendTop + legendHeight(series, width) + 8;
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]).filter((v) => v != null));
  const [xMin, xMax] = [Math.min(...xs), Math.max(...xs)];
  const log = xMin > 0 && xMax / xMin >= 100;
  const max = niceMax(Math.max(...ys));
  const y = (v) => plot.top + plot.height - (v / max) * plot.height;
  const scale = log ? (v) => Math.log10(v) : (v) => v;
  const [lo, hi] = [scale(xMin), scale(xMax)];
  const pad = hi === lo ? 1 : (hi - lo) * 0.06;
  const x = (v) => plot.left + ((scale(v) - lo + pad) / (hi - lo + 2 * pad)) * plot.width;
  const out = [open(width, height, title), ...yAxis(plot, max, y, yLabel)];
  for (const tick of [...new Set(xs)].sort((a, b) => a - b)) {
    out.push(line(x(tick), plot.top + plot.height, x(tick), plot.top + plot.height + 4, '#333'));
    out.push(text(x(tick), plot.top + plot.height + 18, tick.toLocaleString('en-US'), 'middle'));
  }
  out.push(text(plot.left + plot.width / 2, plot.top + plot.height + 36, `${xLabel}${log ? ' (log scale)' : ''}`, 'middle'));
  out.push(line(plot.left, plot.top + plot.height, plot.left + plot.width, plot.top + plot.height, '#333'));
  series.forEach((s, i) => {
    const colour = PALETTE[i % PALETTE.length];
    const points = s.points.filter((p) => p[1] != null).sort((a, b) => a[0] - b[0]);
    if (points.length > 1)
      out.push(`<polyline class="series" fill="none" stroke="${colour}" stroke-width="2" points="${points.map((p) => `${fmt(x(p[0]))},${fmt(y(p[1]))}`).join(' ')}"/>`);
    for (const p of points) {
      out.push(
        `<circle class="point" cx="${fmt(x(p[0]))}" cy="${fmt(y(p[1]))}" r="3.5" fill="${colour}"><title>${escape(`${s.name}, ${p[0].toLocaleString('en-US')}: ${p[1]}`)}</title></circle>`,
      );
    }
  });
  out.push(...legend(series, width, legendTop, 'line'));
  return `${out.join('\n')}\n</svg>\n`;
}

function open(width, height, title) {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escape(title)}" ${FONT} font-size="12">`,
    `<title>${escape(title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="600">${escape(title)}</text>`,
  ].join('\n');
}

function yAxis(plot, max, y, label) {
  const out = [line(plot.left, plot.top, plot.left, plot.top + plot.height, '#333')];
  for (let i = 0; i <= 5; i++) {
    const v = (max * i) / 5;
    out.push(line(plot.left, y(v), plot.left + plot.width, y(v), '#e5e5e5'));
    out.push(text(plot.left - 6, y(v) + 4, formatTick(v), 'end'));
  }
  out.push(`<text x="14" y="${fmt(plot.top + plot.height / 2)}" text-anchor="middle" transform="rotate(-90 14 ${fmt(plot.top + plot.height / 2)})">${escape(label)}</text>`);
  return out;
}

/** The legend in columns under the plot: two columns of wide entries fit 760 px. */
function legendLayout(series, width) {
  const columns = series.some((s) => s.name.length > 40) ? 1 : 2;
  return { columns, columnWidth: (width - 40) / columns };
}

function legendHeight(series, width) {
  const { columns } = legendLayout(series, width);
  return Math.ceil(series.length / columns) * LEGEND_ROW;
}

function legend(series, width, top, mark) {
  const { columns, columnWidth } = legendLayout(series, width);
  return series.map((s, i) => {
    const x = 20 + (i % columns) * columnWidth;
    const y = top + Math.floor(i / columns) * LEGEND_ROW;
    const colour = PALETTE[i % PALETTE.length];
    const swatch =
      mark === 'rect'
        ? `<rect x="${fmt(x)}" y="${fmt(y - 10)}" width="12" height="12" fill="${colour}"/>`
        : `<line x1="${fmt(x)}" y1="${fmt(y - 4)}" x2="${fmt(x + 14)}" y2="${fmt(y - 4)}" stroke="${colour}" stroke-width="2"/>`;
    return `<g class="legend">${swatch}${text(x + 20, y, s.name, 'start')}</g>`;
  });
}

function line(x1, y1, x2, y2, stroke) {
  return `<line x1="${fmt(x1)}" y1="${fmt(y1)}" x2="${fmt(x2)}" y2="${fmt(y2)}" stroke="${stroke}" stroke-width="1"/>`;
}

function text(x, y, content, anchor) {
  return `<text x="${fmt(x)}" y="${fmt(y)}" text-anchor="${anchor}">${escape(content)}</text>`;
}

/** A round upper bound for an axis: 1, 2 or 5 times a power of ten, at least `value`. */
function niceMax(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((m) => m * power).find((m) => m >= value);
}

function formatTick(v) {
  return Number.isInteger(v) ? v.toLocaleString('en-US') : String(Number(v.toPrecision(3)));
}

function fmt(n) {
  return String(Math.round(n * 10) / 10);
}

function escape(s) {
  return String(s).replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
}
