import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { z } from 'zod';
import { CairnError, describeError } from '../errors.js';

export type JsonlLine<T> = { line: number; value: T };
export type JsonlError = { line: number; message: string };

/**
 * Reads a JSON Lines file and validates every non-blank line against `schema`. Returns all valid values
 * and all errors (with 1-based line numbers) so that a caller can refuse the whole file on any error.
 */
export async function readJsonl<S extends z.ZodType>(file: string, schema: S): Promise<{ values: JsonlLine<z.infer<S>>[]; errors: JsonlError[] }> {
  const values: JsonlLine<z.infer<S>>[] = [];
  const errors: JsonlError[] = [];
  const stream = createReadStream(file, { encoding: 'utf8' });
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
  for await (const text of createInterface({ input: stream, crlfDelay: Infinity })) {
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
      const issue = result.error.issues[0]!;
      const at = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
      errors.push({ line, message: `${at}${issue.message}` });
    }
  }
  return { values, errors };
}
