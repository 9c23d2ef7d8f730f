import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StreamedAnswer, answerOf } from './answer.js';

const openAiStream = [
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] })}\n\n`,
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'Checking the ' } }] })}\n\n`,
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'tide table. ✓' } }] })}\n\n`,
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'c1', function: { name: 'tides', arguments: '{"port":' } }] } }] })}\n\n`,
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"Porto"}' } }] } }] })}\n\n`,
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] })}\n\n`,
  'data: [DONE]\n\n',
].join('');

describe('StreamedAnswer', () => {
  it('assembles the same answer however the stream is cut into chunks, and the same as the non-streamed answer', () => {
    const bytes = new TextEncoder().encode(openAiStream);
    const whole = answerOf('openai', {
      choices: [{ message: { content: 'Checking the tide table. ✓', tool_calls: [{ id: 'c1', function: { name: 'tides', arguments: '{"port":"Porto"}' } }] } }],
    });
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 12 }), (cuts) => {
        const answer = new StreamedAnswer('openai');
        let from = 0;
        for (const at of [...cuts].sort((a, b) => a - b)) {
          answer.push(bytes.slice(from, at));
          from = at;
        }
        answer.push(bytes.slice(from));
        expect(answer.complete).toBe(true);
        expect(answer.message()).toEqual(whole);
      }),
    );
  });

  it('is not complete until the stream says so', () => {
    const answer = new StreamedAnswer('anthropic');
    answer.push(
      new TextEncoder().encode(
        `event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Half"}}\n\n`,
      ),
    );
    expect(answer.complete).toBe(false);
    expect(answer.message()).toEqual({ role: 'assistant', content: 'Half' });
    answer.push(new TextEncoder().encode('event: message_stop\ndata: {"type":"message_stop"}\n\n'));
    expect(answer.complete).toBe(true);
  });
});
