import { LIMITS, scopeSchema } from '../memory/schemas.js';
import { parseInput } from '../parse-input.js';
import type { NewProxyTurn, ProxyTurn, ProxyTurnStore } from '../store/proxy-turns.js';
import type { AddMessagesResult } from '../store/store.js';
import type { NewMessage, Scope } from '../types.js';
import { messageIdOf, type ProxyMessage } from './conversation.js';

/** One exchange the memory proxy forwarded, to record: the request's conversation (without injected text) and the answer. */
export type ProxyCapture = Omit<NewProxyTurn, 'recorded'> & { messages: readonly ProxyMessage[]; answer: ProxyMessage | null };

/** How the capture records messages: the façade's `recordMessages`, so extraction runs as for any capture. */
export type RecordMessages = (messages: readonly NewMessage[], options: { connection?: string | undefined }) => Promise<AddMessagesResult>;

/** What the memory proxy recorded (DESIGN.md, "Memory proxy"): its turns per session, and the messages they added (`cairn.proxy`). */
export class ProxyTurns {
  constructor(
    private readonly turns: ProxyTurnStore,
    private readonly record: RecordMessages,
  ) {}

  /**
   * Records one exchange the memory proxy forwarded: the request's messages and, for a complete answer,
   * the answer, each under the id of its place in the session, so only what L0 does not hold yet is
   * written. An aborted answer records the request's messages only, a failed request nothing; each is
   * kept as a turn of the session. A retry of a request whose exchange was recorded records nothing
   * (`retry: true`).
   */
  async capture(scope: Scope, capture: ProxyCapture, options: { connection?: string } = {}): Promise<{ recorded: number; retry: boolean }> {
    const valid = checkScope(scope);
    if ((await this.turns.find(valid, capture.fingerprint))?.status === 'complete') return { recorded: 0, retry: true };
    const said = capture.status === 'failed' ? [] : capture.status === 'complete' && capture.answer ? [...capture.messages, capture.answer] : capture.messages;
    const messages: NewMessage[] = said.map((m, position) => ({
      id: messageIdOf(capture.sessionKey, position, m),
      scope: valid,
      sessionKey: capture.sessionKey,
      role: m.role,
      content: clipForL0(m.content),
      name: m.name ?? null,
    }));
    const recorded = messages.length > 0 ? (await this.record(messages, { connection: options.connection })).inserted : 0;
    const { messages: _messages, answer: _answer, ...turn } = capture;
    await this.turns.save(valid, { ...turn, recorded });
    return { recorded, retry: false };
  }

  /** The memory proxy's turns of a session, oldest first (the dashboard's "what the model was given"). */
  async list(scope: Scope, sessionKey: string, limit = 200): Promise<ProxyTurn[]> {
    return this.turns.listBySession(checkScope(scope), sessionKey, limit);
  }

  /** Which of `sessionKeys` the memory proxy captured. */
  async proxiedSessions(scope: Scope, sessionKeys: readonly string[]): Promise<Set<string>> {
    return this.turns.proxiedSessions(checkScope(scope), sessionKeys);
  }
}

/**
 * A proxied message as L0 can hold it: a client's request is not refused for one long tool result, so what
 * exceeds the message limit is cut, with a note (the id still hashes the whole text).
 */
function clipForL0(content: string): string {
  const max = LIMITS.messageLength;
  if (content.length <= max) return content;
  const note = ' … [cut by the memory proxy]';
  let end = max - note.length;
  // Never half of a surrogate pair.
  if (/[\uD800-\uDBFF]/.test(content[end - 1]!)) end--;
  return content.slice(0, end) + note;
}

function checkScope(scope: Scope): Scope {
  return parseInput(scopeSchema, scope, 'scope');
}
