import { describe, expect, it } from 'vitest';
import { classifyError, errorRecordId, normalizeKeywords, shortHash } from './error-history.js';

describe('classifyError', () => {
  it.each([
    ['not exist: mcp__x__y', 'tool_not_exist'],
    ['parameter "q" is required', 'required_param'],
    ['invalid value for limit', 'invalid_param'],
    ['request timed out after 30s', 'timeout'],
    ['HTTP 429 Too Many Requests', 'rate_limit'],
    ['403 Forbidden', 'permission'],
    ['connect ECONNREFUSED 127.0.0.1:9', 'network'],
    ['no data for this query', 'no_result'],
    ['the printer is on fire', 'other'],
  ])('%s → %s', (text, expected) => {
    expect(classifyError(text)).toBe(expected);
  });

  it('answers null for an empty text', () => {
    expect(classifyError('  ')).toBeNull();
  });
});

describe('normalizeKeywords', () => {
  it('trims, folds width and case, collapses spaces and drops blanks and duplicates', () => {
    expect(normalizeKeywords([' Search_Web ', 'SEARCH_WEB', 'ＡＰＩ  key', '', '   ', 'api key'])).toEqual(['search_web', 'api key']);
  });
});

describe('errorRecordId', () => {
  const scope = { userId: 'u', agentId: 'a' };
  it('is 64 hex characters, stable across whitespace and case of symptom and fix, and differs per scope and tool', () => {
    const id = errorRecordId(scope, 'fetch_page', 'Certificate  expired', 'used the mirror');
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(errorRecordId(scope, 'fetch_page', ' certificate expired ', 'Used the mirror')).toBe(id);
    expect(errorRecordId({ ...scope, userId: 'v' }, 'fetch_page', 'certificate expired', 'used the mirror')).not.toBe(id);
    expect(errorRecordId(scope, 'search_web', 'certificate expired', 'used the mirror')).not.toBe(id);
    expect(shortHash(id)).toBe(id.slice(0, 8));
  });
});
