/** Types of bench/decisions.mjs for the TypeScript tests. */
export interface Evidence {
  file: string;
  field: string;
  what: string;
  quoted: string;
}
export function decisionRecords(decisionsDir: string): string[];
export function valueAt(document: unknown, path: string): unknown;
export function readRecord(recordFile: string, resultsDir: string): { text: string; evidence: Evidence[]; stale: string[]; unreadable: string[]; refreshed: string };
export function refreshDecisions(decisionsDir: string, resultsDir: string): { record: string; stale: string[] }[];
