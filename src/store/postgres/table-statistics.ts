import { describeError, isCairnError } from '../../errors.js';
import type { PostgresDatabase } from './postgres-db.js';

/** Rows a table must gain before it is first analysed here; later, as many rows as it held when last analysed. */
const MIN_ROWS = 1_000;

/**
 * Keeps the planner's statistics in step with bulk writes. Autovacuum analyses a table once a tenth of
 * its rows changed, on its own schedule (a minute apart by default); until then the planner takes a
 * freshly filled table for a nearly empty one and plans for a handful of rows. Measured on 10,000
 * messages searched right after their import: 14 ms a search instead of 2, because the highest
 * position and the hits' ids were read by scanning the scope, and vector searches sorted the whole scope
 * instead of walking the HNSW graph. So once this process has written at least as many rows to a table
 * as it held when last analysed (and at least {@link MIN_ROWS}), it analyses the table in the
 * background: a few passes over a large import, each a sample of the table.
 */
export class TableStatistics {
  /** Rows written per table since it was last analysed here. */
  private readonly written = new Map<string, number>();
  /** Rows per table as its last analysis counted them. */
  private readonly analysed = new Map<string, number>();
  private readonly due = new Set<string>();
  private running: Promise<void> | null = null;

  constructor(
    private readonly db: PostgresDatabase,
    private readonly warn: (message: string) => void,
  ) {}

  /** Notes `rows` rows written to each of `tables` (fixed names, never request text). */
  wrote(tables: readonly string[], rows: number): void {
    if (rows <= 0) return;
    for (const table of tables) {
      const written = (this.written.get(table) ?? 0) + rows;
      this.written.set(table, written);
      if (written >= Math.max(MIN_ROWS, this.analysed.get(table) ?? 0)) this.due.add(table);
    }
    if (this.due.size > 0 && this.running === null) this.running = this.analyse();
  }

  /** Waits for an analysis in flight (before the pool closes). */
  async close(): Promise<void> {
    await this.running;
  }

  private async analyse(): Promise<void> {
    try {
      while (this.due.size > 0) {
        const tables = [...this.due];
        this.due.clear();
        const counted = new Map(tables.map((t) => [t, this.written.get(t) ?? 0]));
        for (const t of tables) this.written.set(t, 0);
        try {
          // SKIP_LOCKED: a table another session holds (an index build, another analysis) is skipped, not
          // waited for. An analysis that waited could close a cycle with CREATE INDEX CONCURRENTLY, which
          // waits for this statement's transaction while holding the table (seen as `deadlock detected`
          // failing the index build). A skipped table's rows are not counted again: its next bulk write
          // makes it due.
          await this.db.query(`ANALYZE (SKIP_LOCKED) ${tables.join(', ')}`);
        } catch (err) {
          // The analysis could not run (a lock timeout on the catalog): the rows stay counted, the next write tries again.
          for (const [t, n] of counted) this.written.set(t, (this.written.get(t) ?? 0) + n);
          if (isCairnError(err, 'busy')) return;
          throw err;
        }
        const rows = await this.db.query<{ name: string; rows: number }>(
          `SELECT relname AS name, reltuples::float8 AS rows FROM pg_class
           WHERE relname = ANY($1::text[]) AND relkind = 'r' AND relnamespace = current_schema()::regnamespace`,
          [tables],
        );
        for (const { name, rows: n } of rows) this.analysed.set(name, Math.max(0, n));
      }
    } catch (err) {
      // Only the plans of the next searches are at stake; the writes themselves are committed.
      this.warn(`could not analyse tables after a bulk write: ${describeError(err)}`);
    } finally {
      this.running = null;
    }
  }
}
