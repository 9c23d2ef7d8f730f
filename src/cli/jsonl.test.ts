import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundedLines } from './jsonl.js';

async function collect(chunks: readonly Buffer[], maxBytes?: number): Promise<string[]> {
  async function* input() {
    yield* chunks;
  }
  const lines: string[] = [];
  for await (const line of boundedLines(input(), maxBytes)) lines.push(line);
  return lines;
}

describe('boundedLines', () => {
  it('splits at \\n (dropping a \\r before it) however the bytes are cut into chunks: multi-byte characters, CRLF, no final newline', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.string({ unit: fc.constantFrom('a', 'é', '字', '😀', '\r', ' ') })), fc.array(fc.nat(), { maxLength: 8 }), async (lines, cuts) => {
        const bytes = Buffer.from(lines.join('\n'), 'utf8');
        const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const chunks = [0, ...at, bytes.length].slice(1).map((end, i, ends) => bytes.subarray(i === 0 ? 0 : ends[i - 1], end));
        // A final newline ends the last line rather than starting an empty one.
        const split = lines.join('\n').split('\n');
        if (split.at(-1) === '') split.pop();
        const expected = split.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
        expect(await collect(chunks)).toEqual(expected);
      }),
    );
  });

  it('refuses a line longer than the limit, naming it, before reading the rest', async () => {
    let read = 0;
    async function* endless() {
      yield Buffer.from('{"header":1}\n');
      for (;;) {
        read++;
        yield Buffer.alloc(1024, 'a');
      }
    }
    const lines: string[] = [];
    await expect(
      (async () => {
        for await (const line of boundedLines(endless(), 10_000)) lines.push(line);
      })(),
    ).rejects.toMatchObject({ code: 'invalid_input', message: 'line 2 is longer than 10000 bytes, the most a line may hold' });
    expect(lines).toEqual(['{"header":1}']);
    expect(read).toBe(10);
    expect(await collect([Buffer.alloc(10_000, 'a')], 10_000)).toHaveLength(1);
  });
});
