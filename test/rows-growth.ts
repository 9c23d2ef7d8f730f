/** One `WasmRows` under test (search/wasm-rows.ts) beside a plain mirror of what it holds. */
export type GrowingRows = {
  /** Reserves room for one more row and writes it, in the rows and the mirror. */
  add(): void;
  /** Asserts that a scan of the rows equals the mirror's reference answer. */
  check(): void;
  /** Moves the last row into the first one's place, as a deletion does, in the rows and the mirror. */
  moveLastToFirst(): void;
};

/**
 * The growth every `WasmRows` must survive: `count` rows, then `more` (past the first room of 1,024 rows,
 * after scans have used the memory beyond the rows: it grows), then the last row moved to the first place;
 * checked after each step.
 */
export function growAndMove(rows: GrowingRows, count: number, more: number): void {
  for (let i = 0; i < count; i++) rows.add();
  rows.check();
  for (let i = count; i < more; i++) rows.add();
  rows.check();
  rows.moveLastToFirst();
  rows.check();
}
