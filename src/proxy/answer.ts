import { toolCallLine, type ProxyMessage, type ProxyProvider } from './conversation.js';

type Json = Record<string, unknown>;

/** The assistant message of a non-streamed answer (its text and tool calls), or null when it holds neither. */
export function answerOf(provider: ProxyProvider, body: unknown): ProxyMessage | null {
  const b = asObject(body);
  if (provider === 'openai') {
    const message = asObject(asObject(asArray(b.choices)[0]).message);
    const calls = asArray(message.tool_calls).map((call) => {
      const fn = asObject(asObject(call).function);
      return toolCallLine(String(fn.name ?? 'tool'), typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {}));
    });
    return assistant([typeof message.content === 'string' ? message.content : '', ...calls]);
  }
  return assistant(
    asArray(b.content).map((raw) => {
      const block = asObject(raw);
      if (block.type === 'text') return String(block.text ?? '');
      if (block.type === 'tool_use') return toolCallLine(String(block.name ?? 'tool'), JSON.stringify(block.input ?? {}));
      return '';
    }),
  );
}

/**
 * Assembles a streamed answer from its server-sent events as they pass through, without holding them
 * back: OpenAI's `chat.completion.chunk` deltas (text, tool-call name and argument fragments) up to a
 * finish reason or `[DONE]`, or Anthropic's content blocks (text and `input_json_delta` fragments) up to a
 * stop reason or `message_stop`.
 */
export class StreamedAnswer {
  /** True once the stream said the answer is whole (a finish or stop reason, `[DONE]`, `message_stop`). */
  complete = false;
  private readonly decoder = new TextDecoder();
  private pending = '';
  private text = '';
  /** Tool calls by their index in the stream: name and the argument text so far. */
  private readonly calls = new Map<number, { name: string; args: string; json: boolean }>();
  /** Anthropic: content blocks by index, text or tool use, in stream order. */
  private readonly blocks = new Map<number, { kind: 'text' | 'tool'; text: string; name: string }>();

  constructor(private readonly provider: ProxyProvider) {}

  /** Feeds the next bytes of the stream. */
  push(chunk: Uint8Array): void {
    this.pending += this.decoder.decode(chunk, { stream: true });
    let end: RegExpExecArray | null;
    while ((end = /\r?\n\r?\n/.exec(this.pending))) {
      const event = this.pending.slice(0, end.index);
      this.pending = this.pending.slice(end.index + end[0].length);
      this.event(event);
    }
  }

  /** The assistant message so far (null when it holds nothing). */
  message(): ProxyMessage | null {
    if (this.provider === 'openai') {
      const calls = [...this.calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => toolCallLine(c.name, c.args));
      return assistant([this.text, ...calls]);
    }
    const parts = [...this.blocks.entries()].sort(([a], [b]) => a - b).map(([, b]) => (b.kind === 'text' ? b.text : toolCallLine(b.name, canonicalJson(b.text))));
    return assistant(parts);
  }

  private event(raw: string): void {
    const data = raw
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n');
    if (data === '') return;
    if (data === '[DONE]') {
      this.complete = true;
      return;
    }
    let parsed: Json;
    try {
      parsed = asObject(JSON.parse(data));
    } catch {
      return;
    }
    if (this.provider === 'openai') this.openAiChunk(parsed);
    else this.anthropicEvent(parsed);
  }

  private openAiChunk(chunk: Json): void {
    const choice = asObject(asArray(chunk.choices)[0]);
    // A finish reason ends the answer even from a server that sends no [DONE] after it.
    if (typeof choice.finish_reason === 'string') this.complete = true;
    const delta = asObject(choice.delta);
    if (typeof delta.content === 'string') this.text += delta.content;
    for (const raw of asArray(delta.tool_calls)) {
      const call = asObject(raw);
      const index = typeof call.index === 'number' ? call.index : 0;
      const fn = asObject(call.function);
      const entry = this.calls.get(index) ?? { name: 'tool', args: '', json: false };
      if (typeof fn.name === 'string') entry.name = fn.name;
      if (typeof fn.arguments === 'string') entry.args += fn.arguments;
      this.calls.set(index, entry);
    }
  }

  private anthropicEvent(event: Json): void {
    const index = typeof event.index === 'number' ? event.index : 0;
    if (event.type === 'content_block_start') {
      const block = asObject(event.content_block);
      if (block.type === 'text') this.blocks.set(index, { kind: 'text', text: String(block.text ?? ''), name: '' });
      else if (block.type === 'tool_use') {
        const input = asObject(block.input);
        this.blocks.set(index, { kind: 'tool', text: Object.keys(input).length > 0 ? JSON.stringify(input) : '', name: String(block.name ?? 'tool') });
      }
    } else if (event.type === 'content_block_delta') {
      const delta = asObject(event.delta);
      const block = this.blocks.get(index);
      if (!block) return;
      if (delta.type === 'text_delta' && typeof delta.text === 'string') block.text += delta.text;
      else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string') block.text += delta.partial_json;
    } else if (event.type === 'message_stop' || (event.type === 'message_delta' && typeof asObject(event.delta).stop_reason === 'string')) {
      this.complete = true;
    }
  }
}

/** Tool input as a resent request carries it (`JSON.stringify` of the parsed object), so the two record alike. */
function canonicalJson(text: string): string {
  if (text.trim() === '') return '{}';
  try {
    return JSON.stringify(JSON.parse(text));
  } catch {
    return text;
  }
}

function assistant(parts: readonly string[]): ProxyMessage | null {
  const content = parts.filter((p) => p !== '').join('\n');
  return content.trim() === '' ? null : { role: 'assistant', content };
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function asObject(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}
