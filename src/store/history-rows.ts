import type { Scope } from '../types.js';
import { copyColumns, rowScope } from './row-fields.js';
import type { ErrorRecord, ErrorRecordWrite, NewRunToolCall, RunSummary, RunText, RunToolCall, ToolCallSource } from './store.js';

/*
 * Rows of the history tables and their mapping to the contract's types. Both engines use the same column
 * names and value encodings (flags as 0/1, keywords as JSON text), which is also what lets one export
 * format serve both, so one mapping serves both.
 */

export type RunRow = {
  seq: number;
  task_id: string;
  user_id: string;
  agent_id: string;
  session_key: string;
  objective: string;
  reply: string | null;
  model: string | null;
  started_at: string;
  ended_at: string | null;
  updated_at: string;
};

export type ToolCallRow = {
  seq: number;
  /** The run's position (SQLite reads it to group calls by run; the contract never returns it). */
  run_seq?: number;
  name: string;
  arguments: string;
  result: string;
  is_error: number;
  duration_ms: number | null;
  at: string;
  source: ToolCallSource;
  reusable: number | null;
};

export type RunTextRow = { key: string; task_id: string; kind: RunText['kind']; name: string | null; arguments: string | null; content: string; at: string };

export type ErrorRow = {
  seq: number;
  id: string;
  user_id: string;
  agent_id: string;
  tool_name: string;
  keywords: string;
  symptom: string;
  cause: string | null;
  action: string;
  outcome: 'resolved';
  created_at: string;
  updated_at: string;
};

const runColumns = copyColumns(['session_key', 'objective', 'reply', 'model', 'started_at', 'ended_at']);

export function toRunSummary(row: RunRow): RunSummary {
  return { taskId: row.task_id, scope: rowScope(row), ...runColumns(row) };
}

const toolCallColumns = copyColumns(['name', 'arguments', 'result', 'is_error', 'duration_ms', 'at', 'source', 'reusable']);

export function toToolCall(row: ToolCallRow): RunToolCall {
  return { seq: Number(row.seq), ...toolCallColumns(row), isError: row.is_error === 1, reusable: row.reusable === null ? null : row.reusable === 1 };
}

export function toRunText(row: RunTextRow): RunText {
  return { key: row.key, taskId: row.task_id, kind: row.kind, name: row.name, arguments: row.arguments, content: row.content, at: row.at };
}

const errorColumns = copyColumns(['tool_name', 'keywords', 'symptom', 'cause', 'action', 'outcome', 'created_at', 'updated_at']);

export function toErrorRecord(row: ErrorRow): ErrorRecord {
  return { id: row.id, scope: rowScope(row), ...errorColumns(row), keywords: JSON.parse(row.keywords) as string[] };
}

export function toFlag(value: NewRunToolCall['reusable']): number | null {
  return value === undefined || value === null ? null : value ? 1 : 0;
}

/** The columns a new error record's insert starts with, on both engines; {@link errorRecordValues} gives their values in this order. */
export const ERROR_INSERT_COLUMNS = 'id, user_id, agent_id, tool_name, keywords, symptom, cause, action, outcome';

export function errorRecordValues(scope: Scope, record: ErrorRecordWrite): unknown[] {
  return [record.id, scope.userId, scope.agentId, record.toolName, JSON.stringify(record.keywords), record.symptom, record.cause, record.action, record.outcome];
}
