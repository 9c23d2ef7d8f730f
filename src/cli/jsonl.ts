import { createReadStream } from 'node:fs';
import type { z } from 'zod';
import { CairnError, describeError, isCairnError } from '../errors.js';
import { issueText } from '../parse-input.js';

/**
 * The longest line an import or export file may hold, in bytes (64 MiB): far above any stored row (a message is
 * at most 200,000 characters), far below what a string can hold, so a line that never ends (a gzip bomb)
 * is refused after 64 MiB instead of growing until the process dies.
 */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

/**
 * The lines of a byte stream (UTF-8; `\n` or `\r\n`), decoded one at a time. A line longer than `maxBytes`
 * throws `invalid_input` naming it (1-based) as soon as that many bytes are held, never after.
 */
export async function* boundedLines(input: AsyncIterable<Buffer>, maxBytes = MAX_LINE_BYTES): AsyncGenerator<string> {
  let parts: Buffer[] = [];
  let held = 0;
  let line = 1;
  const take = (): string => {
    const text = Buffer.concat(parts, held).toString('utf8');
    parts = [];
    held = 0;
    line++;
    return text.endsWith('\r') ? text.slice(0, -1) : text;
  };
  for await (const chunk of input) {
    let start = 0;
    while (start <= chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline;
      held += end - start;
      if (held > maxBytes) throw new CairnError('invalid_input', `line ${line} is longer than ${maxBytes} bytes, the most a line may hold`);
      if (end > start) parts.push(chunk.subarray(start, end));
      if (newline === -1) break;
      yield take();
      start = newline + 1;
    }
  }
  if (held > 0) yield take();
}

/**
 * The lines of `file` as `lines` reads them (e.g. {@link boundedLines} over its bytes), with a failed read
 * as a {@link CairnError} naming the file (and the last line read), `suffix` appended to its message.
 */
export async function* fileLines(file: string, lines: AsyncIterable<string>, suffix = ''): AsyncGenerator<string> {
  let line = 0;
  const reader = lines[Symbol.asyncIterator]();
  for (;;) {
    let next: IteratorResult<string>;
    try {
      next = await reader.next();
    } catch (err) {
      if (isCairnError(err)) throw new CairnError(err.code, `${file}: ${err.message}${suffix}`, { cause: err });
      const where = line === 0 ? file : `${file} after line ${line}`;
      throw new CairnError('invalid_input', `cannot read ${where}: ${describeError(err)}${suffix}`, { cause: err });
    }
    if (next.done) return;
    line++;
    yield next.value;
  }
}

export type JsonlLine<T> = { line: number; value: T };
export type JsonlError = { line: number; message: string };

/**
 * Reads a JSON Lines file and validates every non-blank line against `schema`. Returns all valid values
 * and all errors (with 1-based line numbers) so that a caller can refuse the whole file on any error.
 */
export async function readJsonl<S extends z.ZodType>(file: string, schema: S): Promise<{ values: JsonlLine<z.infer<S>>[]; errors: JsonlError[] }> {
  const values: JsonlLine<z.infer<S>>[] = [];
  const errors: JsonlError[] = [];
  const stream = createReadStream(file);
  const opened = new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', reject);
  });
  try {
    await opened;
  } catch (err) {
    throw new CairnError('invalid_input', `cannot read ${file}: ${describeError(err)}`);
  }
  let line = 0;
  try {
    for await (const text of fileLines(file, boundedLines(stream))) {
      line++;
      if (text.trim() === '') continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (err) {
        errors.push({ line, message: `not valid JSON (${describeError(err)})` });
        continue;
      }
      const result = schema.safeParse(parsed);
      if (result.success) {
        values.push({ line, value: result.data });
      } else {
        errors.push({ line, message: issueText(result.error.issues[0]!, 'record', schema) });
      }
    }
  } finally {
    stream.destroy();
  }
  return { values, errors };
}
