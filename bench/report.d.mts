/** Types of bench/report.mjs for the TypeScript tests. */
export function readResults(resultsDir: string): ({ file: string; name: string } & Record<string, unknown>)[];
export function renderReport(results: ({ file: string; name: string } & Record<string, unknown>)[]): string;
export function writeReport(resultsDir: string, reportFile: string): { charts: string[] };
