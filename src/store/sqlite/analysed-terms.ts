import type Database from 'better-sqlite3';
import { errorRecordText } from '../error-record-text.js';
import { analyzeForIndex } from '../../text/analyze.js';

/** The analysed terms of a memory or error record as stored: space-separated, with their count. */
export type StoredTerms = { terms: string; count: number };

/** The columns of an error record its text is made of. */
export type ErrorTextRow = { tool_name: string; keywords: string; symptom: string; cause: string | null; action: string };

/** Analyses `text` for the keyword index (text/analyze.ts) and counts its terms. */
export function storedTerms(text: string): StoredTerms {
  const terms = analyzeForIndex(text);
  return { terms, count: terms === '' ? 0 : terms.split(' ').length };
}

/** The text an error row is searched and embedded by (store/error-record-text.ts). */
export function errorRowText(row: ErrorTextRow): string {
  return errorRecordText({ toolName: row.tool_name, keywords: JSON.parse(row.keywords) as string[], symptom: row.symptom, cause: row.cause, action: row.action });
}

/**
 * Fills `memory_terms` and `error_record_terms` (and with `fts`, the FTS5 indexes that match the same
 * terms) from every stored memory and error record: a migration, a restore. Returns the rows and terms
 * written per FTS5 index.
 */
export function indexAnalysedTerms(db: Database.Database, options: { fts?: boolean } = {}): Map<string, { rows: number; tokens: number }> {
  const written = new Map<string, { rows: number; tokens: number }>();
  const memories = (db.prepare('SELECT seq, content FROM memories').all() as { seq: number; content: string }[]).map((r) => ({ seq: r.seq, text: r.content }));
  const errors = (db.prepare('SELECT seq, tool_name, keywords, symptom, cause, action FROM error_records').all() as (ErrorTextRow & { seq: number })[]).map((r) => ({
    seq: r.seq,
    text: errorRowText(r),
  }));
  const tables = [
    { fts: 'memories_fts', terms: 'memory_terms', key: 'memory_seq', rows: memories },
    { fts: 'error_records_fts', terms: 'error_record_terms', key: 'error_seq', rows: errors },
  ];
  for (const table of tables) {
    const totals = { rows: 0, tokens: 0 };
    // Fixed table names, never user input.
    const putTerms = db.prepare(`INSERT OR REPLACE INTO ${table.terms} (${table.key}, terms, term_count) VALUES (?, ?, ?)`);
    const putFts = db.prepare(`INSERT INTO ${table.fts} (rowid, terms) VALUES (?, ?)`);
    for (const row of table.rows) {
      const { terms, count } = storedTerms(row.text);
      putTerms.run(row.seq, terms, count);
      if (options.fts === true) putFts.run(row.seq, terms);
      totals.rows++;
      totals.tokens += count;
    }
    written.set(table.fts, totals);
  }
  return written;
}
