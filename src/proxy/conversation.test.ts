import { describe, expect, it } from 'vitest';
import { anthropicConversation, fingerprintOf, messageIdOf, openAiConversation, sessionKeyOf, stripInjected } from './conversation.js';
import { injectionBlock, withInjection } from './inject.js';

describe('conversations', () => {
  it('a resent conversation with the injected block gives the same session, fingerprint and message ids as the original', () => {
    const body = {
      model: 'm',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi there' },
      ],
    };
    const block = injectionBlock(['<user-memory>\nLives in Porto\n</user-memory>', '']);
    const injected = withInjection('openai', body, block);
    expect((injected.messages as unknown[]).length).toBe(3);
    const a = openAiConversation(body);
    const b = openAiConversation(injected);
    expect(b).toEqual(a);
    expect(sessionKeyOf(b, undefined)).toBe(sessionKeyOf(a, undefined));
    expect(fingerprintOf('openai', b)).toBe(fingerprintOf('openai', a));
    expect(messageIdOf('s', 0, b.messages[0]!)).toBe(messageIdOf('s', 0, a.messages[0]!));
    expect(messageIdOf('s', 1, a.messages[0]!)).not.toBe(messageIdOf('s', 0, a.messages[0]!));
    expect(sessionKeyOf(a, ' chat-7 ')).toBe('chat-7');
  });

  it('Anthropic system as a string or as blocks is one system prompt; an injected block is dropped from both', () => {
    const messages = [{ role: 'user', content: 'Hello' }];
    const asString = anthropicConversation({ model: 'm', system: 'Be kind.', messages });
    const asBlocks = anthropicConversation({ model: 'm', system: [{ type: 'text', text: 'Be kind.', cache_control: { type: 'ephemeral' } }], messages });
    expect(asBlocks).toEqual(asString);
    const injected = withInjection('anthropic', { model: 'm', system: [{ type: 'text', text: 'Be kind.' }], messages }, injectionBlock(['memories']));
    expect(anthropicConversation(injected)).toEqual(asString);
    expect(stripInjected('a <cairn-memory>\nsecret\n</cairn-memory> b')).toBe('a  b');
  });
});
