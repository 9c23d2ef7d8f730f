import { describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from '../config.js';

// The `tools` config section: defaults and ranges (hermes-tool-search.md §4.6 and the config tests of §6.A/§6.B;
// Cairn refuses out-of-range values, naming the key, where the reference clamps them silently).

const tools = (input: Record<string, unknown>) => parseConfig({ tools: input }).tools;
const refused = (input: Record<string, unknown>) => {
  try {
    tools(input);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected the config to be refused');
};

describe('tools config', () => {
  it('has the reference defaults', () => {
    expect(tools({})).toMatchObject({
      servers: [],
      enabled: 'auto',
      threshold_pct: 5,
      context_length: 128_000,
      search_default_limit: 5,
      max_search_limit: 25,
      listing: 'auto',
      listing_max_tokens: 4000,
    });
  });

  it('maps YAML booleans to on/off and accepts the three states', () => {
    expect(tools({ enabled: true }).enabled).toBe('on');
    expect(tools({ enabled: false }).enabled).toBe('off');
    expect(tools({ enabled: 'on', listing: 'off' })).toMatchObject({ enabled: 'on', listing: 'off' });
    expect(refused({ enabled: 'maybe' })).toMatch(/tools\.enabled/);
    expect(refused({ listing: 'garbage' })).toMatch(/tools\.listing/);
  });

  it('refuses out-of-range values, naming the key', () => {
    expect(refused({ threshold_pct: 150 })).toMatch(/invalid config at tools\.threshold_pct/);
    expect(refused({ threshold_pct: -5 })).toMatch(/tools\.threshold_pct/);
    expect(refused({ max_search_limit: 999 })).toMatch(/tools\.max_search_limit/);
    expect(refused({ listing_max_tokens: 999_999 })).toMatch(/tools\.listing_max_tokens/);
    expect(refused({ listing_max_tokens: -5 })).toMatch(/tools\.listing_max_tokens/);
    expect(refused({ search_default_limit: 10, max_search_limit: 5 })).toMatch(/tools\.search_default_limit: must not exceed max_search_limit/);
  });

  it('reads the limits from the environment', () => {
    const config = loadConfig({ env: { CAIRN_TOOLS_MAX_SEARCH_LIMIT: '30', CAIRN_TOOLS_ENABLED: 'off' } });
    expect(config.tools).toMatchObject({ max_search_limit: 30, enabled: 'off' });
  });

  it('takes stdio and streamable HTTP servers, each with one transport and a unique, __-free name', () => {
    const t = tools({
      servers: [
        { name: 'notes', command: 'node', args: ['notes.js'], env: { TOKEN: 'x' } },
        { name: 'weather', url: 'http://127.0.0.1:9000/mcp', headers: { authorization: 'Bearer y' } },
      ],
    });
    expect(t.servers).toEqual([
      { name: 'notes', command: 'node', args: ['notes.js'], env: { TOKEN: 'x' }, headers: {} },
      { name: 'weather', url: 'http://127.0.0.1:9000/mcp', headers: { authorization: 'Bearer y' }, args: [], env: {} },
    ]);
    expect(refused({ servers: [{ name: 'both', command: 'node', url: 'http://x/mcp' }] })).toMatch(/tools\.servers\.0\.command: give either command/);
    expect(refused({ servers: [{ name: 'neither' }] })).toMatch(/give either command/);
    expect(refused({ servers: [{ name: 'a__b', command: 'x' }] })).toMatch(/tools\.servers\.0\.name: must not contain "__"/);
    expect(refused({ servers: [{ name: 'has space', command: 'x' }] })).toMatch(/tools\.servers\.0\.name/);
    expect(
      refused({
        servers: [
          { name: 'a', command: 'x' },
          { name: 'a', url: 'http://x/mcp' },
        ],
      }),
    ).toMatch(/duplicate server name a/);
    expect(refused({ servers: [{ name: 'a', command: 'x', typo: 1 }] })).toMatch(/tools\.servers\.0/);
  });
});
