/** Types of bench/charts.mjs for the TypeScript tests. */
export type Chart = { file: string; title: string; svg: string };
export function chartsFor(result: { name: string } & Record<string, unknown>): Chart[];
export function barChart(spec: { title: string; yLabel: string; yMax?: number; categories: string[]; series: { name: string; values: (number | null)[] }[] }): string;
export function lineChart(spec: { title: string; xLabel: string; yLabel: string; series: { name: string; points: [number, number | null][] }[] }): string;
