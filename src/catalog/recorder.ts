import type { Scope } from '../types.js';

/** Who a hub tool call was made for: the scope and, when known, the conversation session and turn. */
export type ToolCaller = { scope: Scope; sessionKey?: string | undefined; turnId?: string | undefined };

/** One tool call through the hub (bridge `tool_call` or `POST /v3/tools/call`), as it is recorded. */
export type ToolCallRecord = ToolCaller & {
  /** The name the caller asked for (`<server>__<tool>` when it resolved). */
  name: string;
  /** The arguments as dispatched (after coercion), or as received when the call was refused. */
  arguments?: unknown;
  /** The downstream result unchanged, or the refusal (`{error, …}`). */
  result?: unknown;
  isError: boolean;
  durationMs?: number | undefined;
};

/** What a recorder may add to a failed call: a hint the caller sees (e.g. similar past errors and their fixes). */
export type ToolCallNote = { hint: { text: string } | null };

/**
 * Where the hub reports every call (the history tools implement it). Implementations must not throw:
 * recording never breaks the call it records.
 */
export interface ToolCallRecorder {
  recordToolCall(call: ToolCallRecord): Promise<ToolCallNote | void>;
}

/** Keeps the latest `capacity` calls in memory (default 1,000); for library use without history, and tests. */
export class MemoryToolCallRecorder implements ToolCallRecorder {
  private readonly calls: ToolCallRecord[] = [];

  constructor(private readonly capacity = 1000) {}

  async recordToolCall(call: ToolCallRecord): Promise<void> {
    this.calls.push(call);
    if (this.calls.length > this.capacity) this.calls.splice(0, this.calls.length - this.capacity);
  }

  /** The recorded calls, oldest first. */
  recent(): readonly ToolCallRecord[] {
    return this.calls;
  }
}
