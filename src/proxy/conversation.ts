import { createHash } from 'node:crypto';

/** The two wire shapes the memory proxy speaks. */
export type ProxyProvider = 'openai' | 'anthropic';

/** One message of a proxied conversation as L0 records it: tool calls are text of the assistant's message, tool results are `tool` messages named after their tool. */
export type ProxyMessage = { role: 'user' | 'assistant' | 'tool'; content: string; name?: string };

/** A request's conversation without anything the proxy injected. */
export type Conversation = {
  /** The client's system prompt (every system part joined), '' when none. */
  system: string;
  messages: ProxyMessage[];
  model: string;
  stream: boolean;
};

/** Opening and closing tag of the text the proxy adds to a system prompt; what lies between is never captured. */
export const INJECTION_OPEN = '<cairn-memory>';
export const INJECTION_CLOSE = '</cairn-memory>';
const INJECTED = new RegExp(`${INJECTION_OPEN}[\\s\\S]*?${INJECTION_CLOSE}`, 'g');

/** `text` without any injected block (a client or model that echoes one back), trimmed. */
export function stripInjected(text: string): string {
  return text.replace(INJECTED, '').trim();
}

type Json = Record<string, unknown>;

/**
 * The conversation of an OpenAI chat-completions body: system and developer messages make the system
 * prompt; an assistant's tool calls become lines of its message; a `tool` message is named after the call
 * it answers.
 */
export function openAiConversation(body: Json): Conversation {
  const system: string[] = [];
  const messages: ProxyMessage[] = [];
  const toolNames = new Map<string, string>();
  for (const raw of asArray(body.messages)) {
    const m = asObject(raw);
    const role = m.role;
    if (role === 'system' || role === 'developer') {
      const text = stripInjected(partsText(m.content));
      if (text !== '') system.push(text);
    } else if (role === 'user') {
      push(messages, { role: 'user', content: partsText(m.content) });
    } else if (role === 'assistant') {
      const calls = asArray(m.tool_calls).map((call) => {
        const c = asObject(call);
        const fn = asObject(c.function);
        const name = typeof fn.name === 'string' ? fn.name : 'tool';
        if (typeof c.id === 'string') toolNames.set(c.id, name);
        return toolCallLine(name, typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {}));
      });
      push(messages, { role: 'assistant', content: [partsText(m.content), ...calls].filter((s) => s !== '').join('\n') });
    } else if (role === 'tool' || role === 'function') {
      const id = typeof m.tool_call_id === 'string' ? m.tool_call_id : '';
      const name = toolNames.get(id) ?? (typeof m.name === 'string' ? m.name : 'tool');
      push(messages, { role: 'tool', content: partsText(m.content), name });
    }
  }
  return { system: system.join('\n\n'), messages, model: String(body.model ?? ''), stream: body.stream === true };
}

/**
 * The conversation of an Anthropic messages body: `system` (a string or text blocks) is the system prompt;
 * `tool_use` blocks become lines of the assistant's message, `tool_result` blocks `tool` messages named
 * after the call they answer (before the user's own text of the same message).
 */
export function anthropicConversation(body: Json): Conversation {
  const messages: ProxyMessage[] = [];
  const toolNames = new Map<string, string>();
  for (const raw of asArray(body.messages)) {
    const m = asObject(raw);
    if (typeof m.content === 'string') {
      if (m.role === 'user' || m.role === 'assistant') push(messages, { role: m.role, content: m.content });
      continue;
    }
    const text: string[] = [];
    for (const block of asArray(m.content).map(asObject)) {
      if (block.type === 'text' && typeof block.text === 'string') text.push(block.text);
      else if (block.type === 'tool_use') {
        const name = typeof block.name === 'string' ? block.name : 'tool';
        if (typeof block.id === 'string') toolNames.set(block.id, name);
        text.push(toolCallLine(name, JSON.stringify(block.input ?? {})));
      } else if (block.type === 'tool_result') {
        const id = typeof block.tool_use_id === 'string' ? block.tool_use_id : '';
        push(messages, { role: 'tool', content: partsText(block.content), name: toolNames.get(id) ?? 'tool' });
      }
    }
    if (m.role === 'user' || m.role === 'assistant') push(messages, { role: m.role, content: text.join('\n') });
  }
  const system = typeof body.system === 'string' ? stripInjected(body.system) : stripInjected(partsText(body.system));
  return { system, messages, model: String(body.model ?? ''), stream: body.stream === true };
}

/** How a tool call reads in L0: `[tool call] name {"arg":1}`. */
export function toolCallLine(name: string, args: string): string {
  return `[tool call] ${name} ${args}`;
}

/**
 * The session of a conversation: `x-cairn-session-key` when sent, else a hash of the system prompt and
 * the first user message, which every later request of the same chat repeats.
 */
export function sessionKeyOf(conversation: Conversation, header: string | undefined): string {
  if (header !== undefined && header.trim() !== '') return header.trim();
  const first = conversation.messages.find((m) => m.role === 'user')?.content ?? '';
  return `proxy-${sha256([conversation.system, first]).slice(0, 24)}`;
}

/** What identifies one request (a retry repeats it): provider, model, system prompt and every message. */
export function fingerprintOf(provider: ProxyProvider, conversation: Conversation): string {
  return sha256([provider, conversation.model, conversation.system, ...conversation.messages.flatMap((m) => [m.role, m.name ?? '', m.content])]);
}

/**
 * The L0 id of the message at `position` of a session: the same message resent at the same place has the
 * same id, so recording a whole conversation again records only what L0 does not hold yet.
 */
export function messageIdOf(sessionKey: string, position: number, message: ProxyMessage): string {
  return `px-${sha256([sessionKey, String(position), message.role, message.name ?? '', message.content]).slice(0, 32)}`;
}

/** The newest user message's text: what recall searches with; '' when there is none. */
export function lastUserText(conversation: Conversation): string {
  for (let i = conversation.messages.length - 1; i >= 0; i--) {
    const m = conversation.messages[i]!;
    if (m.role === 'user') return m.content;
  }
  return '';
}

function push(messages: ProxyMessage[], message: ProxyMessage): void {
  const content = stripInjected(message.content);
  if (content !== '') messages.push({ ...message, content });
}

/** A content value as text: a string, or the text parts of an array of content parts. */
function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  return asArray(content)
    .map(asObject)
    .filter((p) => (p.type === 'text' || p.type === undefined) && typeof p.text === 'string')
    .map((p) => p.text as string)
    .join('\n');
}

function sha256(parts: readonly string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex');
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function asObject(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}
