import { describe, expect, it } from 'vitest';
import { toToolCall } from './history-rows.js';
import { toMemory, type MemoryRow } from './memory-rows.js';
import { copyColumns, rowScope } from './row-fields.js';

describe('copyColumns', () => {
  it('copies the named columns under their camelCase names, in the order named, and nothing else', () => {
    const copy = copyColumns(['session_key', 'recorded_at', 'a_b_c']);
    const record = copy({ session_key: 's', recorded_at: 't', a_b_c: 3, left_out: 'x' });
    expect(record).toEqual({ sessionKey: 's', recordedAt: 't', aBC: 3 });
    expect(Object.keys(record)).toEqual(['sessionKey', 'recordedAt', 'aBC']);
  });

  it('lets a mapper convert a column in place: records keep their field order', () => {
    const row: MemoryRow = {
      seq: 7,
      id: 'mem_1',
      user_id: 'u',
      agent_id: 'a',
      content: 'likes tea',
      type: 'persona',
      priority: 50,
      scene_name: 'kitchen',
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-02T00:00:00.000Z',
      activity_start: null,
      activity_end: null,
      source_message_ids: '["m1","m2"]',
      version: 2,
      extractor: 'rules',
      superseded_by: null,
      superseded_in: null,
    };
    const memory = toMemory(row);
    expect(memory.sourceMessageIds).toEqual(['m1', 'm2']);
    expect(memory.scope).toEqual(rowScope(row));
    expect(Object.keys(memory)).toEqual([
      'id',
      'scope',
      'content',
      'type',
      'priority',
      'sceneName',
      'createdAt',
      'updatedAt',
      'activityStart',
      'activityEnd',
      'sourceMessageIds',
      'version',
      'extractor',
      'supersededBy',
    ]);
    const call = toToolCall({ seq: '12', name: 't', arguments: '{}', result: 'ok', is_error: 1, duration_ms: 5, at: 'now', source: 'host', reusable: 0 } as never);
    expect(call).toEqual({ seq: 12, name: 't', arguments: '{}', result: 'ok', isError: true, durationMs: 5, at: 'now', source: 'host', reusable: false });
    expect(Object.keys(call)).toEqual(['seq', 'name', 'arguments', 'result', 'isError', 'durationMs', 'at', 'source', 'reusable']);
  });
});
