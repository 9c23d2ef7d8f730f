import type { Scope } from '../types.js';

/** A `snake_case` column name as its `camelCase` record field, at the type level (`created_at` → `createdAt`). */
type CamelCase<Name extends string> = Name extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : Name;

/**
 * A mapper that copies the named columns of a row to the fields of the same names in camelCase, in the
 * order named, values as they are (the mirror of http/wire.ts's `wireFields`). The row mappers in
 * store/*-rows.ts spell out only what they convert: the scope first, and a converted column (JSON, a
 * flag) set again after the copy, which keeps its place, so records keep the field order they always
 * had. A column a row lacks, or a field a record needs that nothing fills, fails the typecheck.
 */
export function copyColumns<const Column extends string>(columns: readonly Column[]): <Row extends Record<Column, unknown>>(row: Row) => { [C in Column as CamelCase<C>]: Row[C] } {
  const fields = columns.map((column) => [column, column.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase())] as const);
  return (row) => {
    const record: Record<string, unknown> = {};
    for (const [column, field] of fields) record[field] = row[column];
    return record as never;
  };
}

/** The scope a row belongs to. */
export function rowScope(row: { user_id: string; agent_id: string }): Scope {
  return { userId: row.user_id, agentId: row.agent_id };
}
