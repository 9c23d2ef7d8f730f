import { randomBytes } from 'node:crypto';
import type { Memory, MemoryPatch, MemoryType, Message, MessageRole, NewMemory, Scope } from '../types.js';
import { copyColumns, rowScope } from './row-fields.js';
import type { MemoryAuditAction, MemoryAuditEntry, MemoryFilter } from './store.js';

/*
 * Rows of the messages and memories tables and their mapping to the contract's types, for both engines
 * (same column names and encodings; positions arrive as numbers from both drivers).
 */

/** A `messages` row (PostgreSQL's bigint parsed as a number, see postgres-db.ts). */
export type MessageRow = {
  seq: number;
  id: string;
  user_id: string;
  agent_id: string;
  session_key: string;
  role: MessageRole;
  content: string;
  name: string | null;
  recorded_at: string;
  timestamp: string | null;
};

/** A `memories` row, without its `terms` unless a query asks for them. */
export type MemoryRow = {
  seq: number;
  id: string;
  user_id: string;
  agent_id: string;
  content: string;
  type: MemoryType;
  priority: number;
  scene_name: string;
  created_at: string;
  updated_at: string;
  activity_start: string | null;
  activity_end: string | null;
  source_message_ids: string;
  version: number;
  extractor: string;
  superseded_by: string | null;
  superseded_in: string | null;
};

/** The columns of a message as the contract returns it. */
export const MESSAGE_COLUMNS = 'seq, id, user_id, agent_id, session_key, role, content, name, recorded_at, timestamp';
/** The columns of `memories` that a memory record takes as they are (see {@link toMemory}), in table order. */
const MEMORY_RECORD_COLUMNS = [
  'content',
  'type',
  'priority',
  'scene_name',
  'created_at',
  'updated_at',
  'activity_start',
  'activity_end',
  'source_message_ids',
  'version',
  'extractor',
  'superseded_by',
] as const;
/** Every column of `memories` but the analysed `terms`, in table order (what a data export carries). */
export const MEMORY_TABLE_COLUMNS = ['seq', 'id', 'user_id', 'agent_id', ...MEMORY_RECORD_COLUMNS, 'superseded_in'] as const;
/** The columns of a memory as the contract returns it: the same list, for a SELECT. */
export const MEMORY_COLUMNS = MEMORY_TABLE_COLUMNS.join(', ');

const messageColumns = copyColumns(['session_key', 'role', 'content', 'name', 'recorded_at', 'timestamp']);

export function toMessage(row: MessageRow): Message {
  return { id: row.id, scope: rowScope(row), ...messageColumns(row) };
}

const memoryColumns = copyColumns(MEMORY_RECORD_COLUMNS);

export function toMemory(row: MemoryRow): Memory {
  return { id: row.id, scope: rowScope(row), ...memoryColumns(row), sourceMessageIds: JSON.parse(row.source_message_ids) as string[] };
}

/** `items` in the order of `ids`, leaving out ids that matched nothing. */
export function orderBy<T extends { id: string }>(ids: readonly string[], items: readonly T[]): T[] {
  const byId = new Map(items.map((item) => [item.id, item]));
  return ids.flatMap((id) => {
    const item = byId.get(id);
    return item ? [item] : [];
  });
}

/** A generated id: `<prefix>_<time base 36><12 hex>`. */
export function newId(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}${randomBytes(6).toString('hex')}`;
}

/** The priority of a memory written without one. */
export const DEFAULT_PRIORITY = 50;
/** Who the audit trail names for changes made through the plain memory API. */
export const API_ACTOR = 'api';

/** The columns of a memory insert both engines write, in the order of {@link memoryInsertValues}; PostgreSQL appends its derived columns. */
export const MEMORY_INSERT_COLUMNS =
  'id, user_id, agent_id, content, type, priority, scene_name, created_at, updated_at, activity_start, activity_end, source_message_ids, version, extractor';

/** The values of {@link MEMORY_INSERT_COLUMNS} for a new memory; created_at and updated_at are both `now`. */
export function memoryInsertValues(scope: Scope, input: NewMemory & { id: string }, extractor: string, version: number, now: string): unknown[] {
  return [
    input.id,
    scope.userId,
    scope.agentId,
    input.content,
    input.type,
    input.priority ?? DEFAULT_PRIORITY,
    input.sceneName ?? '',
    now,
    now,
    input.activityStart ?? null,
    input.activityEnd ?? null,
    JSON.stringify(input.sourceMessageIds ?? []),
    version,
    extractor,
  ];
}

/** One change to the audit trail of a memory. */
export type AuditChange = { oldVersion?: number; newVersion?: number; oldContent?: string; newContent?: string; relatedId?: string | null };

/** The audit insert both engines run, with `?` placeholders (PostgreSQL numbers them), and its parameters in order. */
export const MEMORY_AUDIT_INSERT = `INSERT INTO memory_audit (memory_id, user_id, agent_id, action, actor, at, old_version, new_version, old_content, new_content, related_id)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

export function memoryAuditParams(scope: Scope, memoryId: string, action: MemoryAuditAction, actor: string, at: string, change: AuditChange): unknown[] {
  return [
    memoryId,
    scope.userId,
    scope.agentId,
    action,
    actor,
    at,
    change.oldVersion ?? null,
    change.newVersion ?? null,
    change.oldContent ?? null,
    change.newContent ?? null,
    change.relatedId ?? null,
  ];
}

/** A `memory_audit` row as {@link toMemoryAuditEntry} reads it. */
export type MemoryAuditRow = {
  memory_id: string;
  action: MemoryAuditAction;
  actor: string;
  at: string;
  old_version: number | null;
  new_version: number | null;
  old_content: string | null;
  new_content: string | null;
  related_id: string | null;
};

export function toMemoryAuditEntry(row: MemoryAuditRow): MemoryAuditEntry {
  return {
    memoryId: row.memory_id,
    action: row.action,
    actor: row.actor,
    at: row.at,
    oldVersion: row.old_version,
    newVersion: row.new_version,
    oldContent: row.old_content,
    newContent: row.new_content,
    relatedId: row.related_id,
  };
}

/** How an engine writes the memory filter: its placeholder for the value just appended, and its case-insensitive scene match. */
export type MemoryFilterDialect = {
  placeholder(values: readonly unknown[]): string;
  /** The predicate that `m`'s scene contains the value at `placeholder`, and the value to bind for `scene`. */
  scene(placeholder: string): string;
  sceneValue(scene: string): string;
};

/**
 * SQL for the optional memory filters over alias `m`, pushed into the candidate query so they never
 * starve results; their values are appended to `values`.
 */
export function memoryFilterSql(filter: MemoryFilter, values: unknown[], dialect: MemoryFilterDialect): string {
  const parts: string[] = [];
  if (filter.includeSuperseded !== true) parts.push('AND m.superseded_by IS NULL');
  if (filter.type !== undefined) {
    values.push(filter.type);
    parts.push(`AND m.type = ${dialect.placeholder(values)}`);
  }
  if (filter.scene !== undefined && filter.scene !== '') {
    values.push(dialect.sceneValue(filter.scene));
    parts.push(`AND ${dialect.scene(dialect.placeholder(values))}`);
  }
  return parts.join(' ');
}

/** The fields an update writes: `patch` over `current` (a null activity time in the patch clears it). */
export function patchedMemory(
  current: Memory,
  patch: MemoryPatch,
): Pick<Memory, 'content' | 'type' | 'priority' | 'sceneName' | 'activityStart' | 'activityEnd' | 'sourceMessageIds'> {
  return {
    content: patch.content ?? current.content,
    type: patch.type ?? current.type,
    priority: patch.priority ?? current.priority,
    sceneName: patch.sceneName ?? current.sceneName,
    activityStart: patch.activityStart === undefined ? current.activityStart : patch.activityStart,
    activityEnd: patch.activityEnd === undefined ? current.activityEnd : patch.activityEnd,
    sourceMessageIds: patch.sourceMessageIds ?? current.sourceMessageIds,
  };
}
