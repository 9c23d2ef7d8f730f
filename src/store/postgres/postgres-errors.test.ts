import { describe, expect, it } from 'vitest';
import { CairnError } from '../../errors.js';
import { toPostgresError } from './postgres-errors.js';

const location = 'postgres://cairn:***@db.example/cairn';
const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('toPostgresError', () => {
  it('maps SQLSTATEs and socket errors to Cairn codes', () => {
    expect(toPostgresError(pgError('23505', 'duplicate key value violates unique constraint "api_keys_pkey"'), location).code).toBe('conflict');
    for (const code of ['40001', '40P01', '55P03', '57014', '53300', '57P01']) expect(toPostgresError(pgError(code, 'x'), location).code).toBe('busy');
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', '08006', '28P01', '3D000']) {
      const mapped = toPostgresError(pgError(code, 'cannot connect'), location);
      expect(mapped.code).toBe('unavailable');
      expect(mapped.message).toContain(location);
    }
    for (const code of ['22021', '22003', '23514']) expect(toPostgresError(pgError(code, 'bad value'), location).code).toBe('invalid_input');
    expect(toPostgresError(new Error('timeout expired'), location).code).toBe('unavailable');
    expect(toPostgresError(new Error('timeout exceeded when trying to connect'), location).code).toBe('busy');
    expect(toPostgresError(pgError('42P01', 'relation "x" does not exist'), location).code).toBe('internal');
  });

  it('keeps a CairnError as it is and never shows a password a driver message quotes', () => {
    const own = new CairnError('not_found', 'memory m1 not found');
    expect(toPostgresError(own, location)).toBe(own);
    const mapped = toPostgresError(pgError('ECONNREFUSED', 'connect to postgres://cairn:s3cret@db.example/cairn refused'), location);
    expect(mapped.message).not.toContain('s3cret');
    expect(mapped.cause).toBeInstanceOf(Error);
  });
});
