import { describe, expect, it } from 'vitest';
import { chatHistoryParams, inferMode } from './chat-history.js';

describe('inferMode', () => {
  it.each([
    [{}, 'list'],
    [{ task_id: 't1', name: 'fetch_page' }, 'tool'],
    [{ task_id: ['t1'], name: 'fetch_page', keyword: 'x' }, 'tool'],
    [{ task_id: 't1' }, 'read'],
    [{ task_id: ['t1', 't2'], keyword: 'x' }, 'read'],
    [{ task_id: 't1', name: '  ' }, 'read'],
    [{ keyword: 'x' }, 'search'],
    [{ keyword: '   ' }, 'list'],
    [{ task_id: [], keyword: 'x' }, 'search'],
    [{ name: 'fetch_page' }, 'list'],
    [{ mode: 'tool_list', task_id: 't1' }, 'tool_list'],
  ] as const)('%j → %s', (params, mode) => {
    expect(inferMode(chatHistoryParams.parse(params))).toBe(mode);
  });

  it('rejects an unknown time_range instead of defaulting', () => {
    const result = chatHistoryParams.safeParse({ keyword: 'x', time_range: '30d' });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toBe('time_range must be one of 1d, 7d, 1m, 1y');
  });
});
