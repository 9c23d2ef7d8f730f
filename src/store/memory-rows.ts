import { randomBytes } from 'node:crypto';
import type { Memory, MemoryType, Message, MessageRole } from '../types.js';

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
/** The columns of a memory as the contract returns it (everything but the analysed `terms`). */
export const MEMORY_COLUMNS = `seq, id, user_id, agent_id, content, type, priority, scene_name, created_at, updated_at,
  activity_start, activity_end, source_message_ids, version, extractor, superseded_by, superseded_in`;

export function toMessage(row: MessageRow): Message {
  return {
    id: row.id,
    scope: { userId: row.user_id, agentId: row.agent_id },
    sessionKey: row.session_key,
    role: row.role,
    content: row.content,
    name: row.name,
    recordedAt: row.recorded_at,
    timestamp: row.timestamp,
  };
}

export function toMemory(row: MemoryRow): Memory {
  return {
    id: row.id,
    scope: { userId: row.user_id, agentId: row.agent_id },
    content: row.content,
    type: row.type,
    priority: row.priority,
    sceneName: row.scene_name,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    activityStart: row.activity_start,
    activityEnd: row.activity_end,
    sourceMessageIds: JSON.parse(row.source_message_ids) as string[],
    version: row.version,
    extractor: row.extractor,
    supersededBy: row.superseded_by,
  };
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
