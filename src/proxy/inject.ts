import { INJECTION_CLOSE, INJECTION_OPEN, type ProxyProvider } from './conversation.js';

type Json = Record<string, unknown>;

/** The injected text, in its marker tags; '' when there is nothing to inject. */
export function injectionBlock(parts: readonly string[]): string {
  const text = parts.filter((p) => p.trim() !== '').join('\n\n');
  return text === '' ? '' : `${INJECTION_OPEN}\n${text}\n${INJECTION_CLOSE}`;
}

/**
 * The request body the upstream receives: the client's, with `block` in its system prompt. OpenAI: a
 * system message after the client's leading system (or developer) messages, so theirs stays first.
 * Anthropic: appended to `system`, a string or an array of text blocks (a new last block, which leaves any
 * `cache_control` breakpoint on the client's blocks where it was).
 */
export function withInjection(provider: ProxyProvider, body: Json, block: string): Json {
  if (block === '') return body;
  if (provider === 'openai') {
    const messages = Array.isArray(body.messages) ? [...(body.messages as unknown[])] : [];
    let at = 0;
    while (at < messages.length && isSystem(messages[at])) at++;
    messages.splice(at, 0, { role: 'system', content: block });
    return { ...body, messages };
  }
  const system = body.system;
  if (Array.isArray(system)) return { ...body, system: [...(system as unknown[]), { type: 'text', text: block }] };
  if (typeof system === 'string' && system.trim() !== '') return { ...body, system: `${system}\n\n${block}` };
  return { ...body, system: block };
}

function isSystem(message: unknown): boolean {
  const role = (message as { role?: unknown } | null)?.role;
  return role === 'system' || role === 'developer';
}
