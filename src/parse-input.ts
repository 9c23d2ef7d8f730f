import { z } from 'zod';
import { CairnError, type CairnErrorCode } from './errors.js';

/**
 * One Zod issue in words, the one format every edge reports bad input in: `invalid <what> at <path>: <reason>`
 * (no `at` for the value as a whole); unknown keys are named, with the keys the object takes when `schema` is that object.
 */
export function issueText(issue: z.core.$ZodIssue, what: string, schema?: z.ZodType): string {
  const at = issue.path.length > 0 ? ` at ${issue.path.map(String).join('.')}` : '';
  if (issue.code !== 'unrecognized_keys') return `invalid ${what}${at}: ${issue.message}`;
  const known = schema instanceof z.ZodObject && issue.path.length === 0 ? ` (it takes ${Object.keys(schema.shape as object).join(', ')})` : '';
  return `invalid ${what}${at}: unknown field ${issue.keys.map((k) => `'${k}'`).join(', ')}${known}`;
}

/** `value` parsed by `schema`, or an `invalid_input` {@link CairnError} naming the first bad field (see {@link issueText}). */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, what: string, code: CairnErrorCode = 'invalid_input'): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new CairnError(code, issueText(result.error.issues[0]!, what, schema));
}
