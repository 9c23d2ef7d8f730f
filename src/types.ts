/** Who a row belongs to. Every stored row carries one; every query is filtered by one inside SQL. */
export type Scope = {
  userId: string;
  agentId: string;
};

/** The scope used when a caller gives none (local, single-user mode). */
export const DEFAULT_SCOPE: Scope = Object.freeze({ userId: 'default', agentId: 'default' });

/** `local`: one default scope for a loopback server. `keys`: every data request carries a key and a full scope. */
export type AuthMode = 'local' | 'keys';

/** Roles of captured messages; `tool` messages carry the tool's name. */
export const MESSAGE_ROLES = ['user', 'assistant', 'system', 'tool'] as const;
export type MessageRole = (typeof MESSAGE_ROLES)[number];

export const MEMORY_TYPES = ['persona', 'episodic', 'instruction'] as const;
export type MemoryType = (typeof MEMORY_TYPES)[number];

/** An L0 conversation message as stored. Times are ISO-8601 strings. */
export type Message = {
  id: string;
  scope: Scope;
  sessionKey: string;
  role: MessageRole;
  content: string;
  /** Who spoke beyond the role: the tool's name for `tool` messages (optional for the others), else null. */
  name: string | null;
  /** When Cairn recorded the message. */
  recordedAt: string;
  /** When the message was said, as the caller gave it (optional). */
  timestamp: string | null;
};

/** A message to record; `id` is generated when absent. */
export type NewMessage = {
  id?: string;
  scope: Scope;
  sessionKey: string;
  role: MessageRole;
  content: string;
  name?: string | null;
  timestamp?: string | null;
};

/** An L1 structured memory as stored. */
export type Memory = {
  id: string;
  scope: Scope;
  content: string;
  type: MemoryType;
  /** Higher is more important; negative marks a global instruction. */
  priority: number;
  sceneName: string;
  createdAt: string;
  updatedAt: string;
  activityStart: string | null;
  activityEnd: string | null;
  sourceMessageIds: string[];
  version: number;
  /** What made it: `manual` (written through the API), `rules`, or `llm:<model>` (the extraction pipeline). */
  extractor: string;
  /** The memory that replaced this one, or null. Superseded memories are kept but hidden from search by default. */
  supersededBy: string | null;
};

export type NewMemory = {
  id?: string;
  content: string;
  type: MemoryType;
  priority?: number;
  sceneName?: string;
  activityStart?: string | null;
  activityEnd?: string | null;
  sourceMessageIds?: string[];
};

export type MemoryPatch = Partial<Omit<NewMemory, 'id'>>;

/** One candidate from a single retrieval path, best first; `score` is path-specific (higher is better). */
export type RankedHit = {
  id: string;
  score: number;
  /**
   * True for a keyword hit on a message that holds the query's terms only in its context (the previous
   * turn), not in its own text: it ranks after every message that holds one (DESIGN.md, "Ranking").
   */
  context?: true;
};

/** Which retrieval paths produced a result (the seed's `strategy`). */
export type SearchStrategy = 'hybrid' | 'embedding' | 'fts' | 'none';
