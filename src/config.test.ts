import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { explainConfig, knownEnvVars, loadConfig, parseConfig } from './config.js';

const dir = mkdtempSync(join(tmpdir(), 'cairn-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('config', () => {
  it('fills safe defaults', () => {
    const config = parseConfig({ data_dir: dir });
    // Offline word vectors when their package is installed (never a network service), plain RRF weight unset.
    expect(config.embedding.provider).toBe('auto');
    expect(config.embedding.fusion_weight).toBeUndefined();
    expect(config.search).toMatchObject({ default_limit: 5, max_limit: 20 });
  });

  it('takes embedding.fusion_weight from the environment and rejects a weight that is not positive', () => {
    expect(loadConfig({ env: { CAIRN_EMBEDDING_FUSION_WEIGHT: '0.25' } }).embedding.fusion_weight).toBe(0.25);
    expect(() => parseConfig({ data_dir: dir, embedding: { fusion_weight: 0 } })).toThrow(/^invalid config at embedding\.fusion_weight: /);
  });

  it('takes knowledge.roots as a list (every tenant) or a mapping by tenant, also from the environment', () => {
    expect(parseConfig({ data_dir: dir }).knowledge.roots).toEqual({});
    expect(parseConfig({ data_dir: dir, knowledge: { roots: ['/srv/wikis'] } }).knowledge.roots).toEqual({ '*': ['/srv/wikis'] });
    expect(parseConfig({ data_dir: dir, knowledge: { roots: { alice: ['/srv/a'], 'bob/support': ['/srv/b'], '*': [] } } }).knowledge.roots).toEqual({
      alice: ['/srv/a'],
      'bob/support': ['/srv/b'],
      '*': [],
    });
    expect(loadConfig({ env: { CAIRN_KNOWLEDGE_ROOTS: '/srv/a, /srv/b' } }).knowledge.roots).toEqual({ '*': ['/srv/a', '/srv/b'] });
    expect(loadConfig({ env: { CAIRN_KNOWLEDGE_ROOTS: '{"alice": ["/srv/a"]}' } }).knowledge.roots).toEqual({ alice: ['/srv/a'] });
    // `cairn config` names the variable as the source of each tenant's entry.
    expect(explainConfig({ env: { CAIRN_KNOWLEDGE_ROOTS: '{"alice": ["/srv/a"]}' } }).sources.get('knowledge.roots.alice')).toEqual({ env: 'CAIRN_KNOWLEDGE_ROOTS' });
    expect(() => parseConfig({ data_dir: dir, knowledge: { roots: { 'a/b/c': ['/srv/a'] } } })).toThrow(/knowledge\.roots/);
    expect(() => parseConfig({ data_dir: dir, knowledge: { roots: { alice: ['relative'] } } })).toThrow(/knowledge\.roots/);
  });

  it('names the exact key and reason of a bad value', () => {
    expect(() => parseConfig({ data_dir: dir, embedding: { provider: 'openai_compatible', model: 'm', dimensions: 8 } })).toThrow(
      'invalid config at embedding.base_url: required when provider is openai_compatible',
    );
    expect(() => parseConfig({ data_dir: dir, embedding: { dimensions: -3 } })).toThrow(/^invalid config at embedding\.dimensions: /);
    expect(() => parseConfig({ data_dir: dir, embeding: {} })).toThrow("invalid config: unknown field 'embeding'");
  });

  it('reads YAML and JSON files, then CAIRN_* variables, then overrides', () => {
    const yaml = join(dir, 'c.yaml');
    writeFileSync(yaml, 'embedding:\n  provider: hash\n  dimensions: 64\n');
    const env = { CAIRN_EMBEDDING_DIMENSIONS: '128', CAIRN_HOME: join(dir, 'home'), UNRELATED: 'x' };
    const config = loadConfig({ file: yaml, env, overrides: { data_dir: join(dir, 'flag') } });
    expect(config.embedding).toMatchObject({ provider: 'hash', dimensions: 128 });
    expect(config.data_dir).toBe(join(dir, 'flag'));
    expect(loadConfig({ env }).data_dir).toBe(join(dir, 'home'));

    const json = join(dir, 'c.json');
    writeFileSync(json, JSON.stringify({ search: { default_limit: 7 } }));
    expect(loadConfig({ file: json, env: {} }).search.default_limit).toBe(7);
  });

  it('fails clearly on an unreadable or malformed file', () => {
    expect(() => loadConfig({ file: join(dir, 'missing.yaml'), env: {} })).toThrow(/cannot read config file/);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"embedding": ');
    expect(() => loadConfig({ file: bad, env: {} })).toThrow(/cannot parse config file/);
  });

  it('finds its file: --config, else CAIRN_CONFIG, else <data dir>/config.yaml, else $XDG_CONFIG_HOME/cairn/config.yaml', () => {
    const root = mkdtempSync(join(dir, 'discover-'));
    const write = (path: string, limit: number) => {
      mkdirSync(join(path, '..'), { recursive: true });
      writeFileSync(path, `search: { default_limit: ${limit} }\n`);
      return path;
    };
    const flag = write(join(root, 'flag.yaml'), 1);
    const fromEnv = write(join(root, 'env.yaml'), 2);
    const data = join(root, 'data');
    const inData = write(join(data, 'config.yaml'), 3);
    const xdg = join(root, 'xdg');
    const inUser = write(join(xdg, 'cairn', 'config.yaml'), 4);
    const env = { CAIRN_CONFIG: fromEnv, XDG_CONFIG_HOME: xdg, HOME: join(root, 'home') };
    const found = (options: Parameters<typeof explainConfig>[0]) => {
      const { config, file } = explainConfig(options);
      return [config.search.default_limit, file?.path, file?.via];
    };
    expect(found({ file: flag, env, overrides: { data_dir: data } })).toEqual([1, flag, 'flag']);
    expect(found({ env, overrides: { data_dir: data } })).toEqual([2, fromEnv, 'CAIRN_CONFIG']);
    expect(found({ env: { ...env, CAIRN_CONFIG: undefined }, overrides: { data_dir: data } })).toEqual([3, inData, 'data dir']);
    // CAIRN_HOME names the data directory as well as --data does.
    expect(found({ env: { XDG_CONFIG_HOME: xdg, CAIRN_HOME: data } })).toEqual([3, inData, 'data dir']);
    expect(found({ env: { XDG_CONFIG_HOME: xdg }, overrides: { data_dir: join(root, 'empty') } })).toEqual([4, inUser, 'user config dir']);
    // Without XDG_CONFIG_HOME: ~/.config.
    const home = join(root, 'home');
    const inHome = write(join(home, '.config', 'cairn', 'config.yaml'), 6);
    expect(found({ env: { HOME: home }, overrides: { data_dir: join(root, 'empty') } })).toEqual([6, inHome, 'user config dir']);
    expect(found({ env: { HOME: join(root, 'nobody'), XDG_CONFIG_HOME: join(root, 'none') }, overrides: { data_dir: join(root, 'empty') } })).toEqual([5, undefined, undefined]);
  });

  it('refuses an unknown CAIRN_* variable, naming the nearest valid one', () => {
    expect(() => loadConfig({ env: { CAIRN_EMBEDING_PROVIDER: 'hash' } })).toThrow('CAIRN_EMBEDING_PROVIDER is not a Cairn setting; did you mean CAIRN_EMBEDDING_PROVIDER?');
    expect(() => loadConfig({ env: { CAIRN_SERVER_PROT: '1' } })).toThrow('did you mean CAIRN_SERVER_PORT?');
    expect(() => loadConfig({ env: { CAIRN_PORT: '1' } })).toThrow('did you mean CAIRN_SERVER_PORT?');
    // Every variable the tests and benches set is a setting.
    for (const name of ['CAIRN_HOME', 'CAIRN_CONFIG', 'CAIRN_EMBEDDING_CACHE_DIR', 'CAIRN_SEARCH_KEYWORD', 'CAIRN_TOOLS_SEMANTIC_FLOOR', 'CAIRN_KNOWLEDGE_WATCH_DEBOUNCE_MS']) {
      expect(knownEnvVars().has(name), name).toBe(true);
    }
  });

  it('lists every problem at once: the environment, the file and each bad value', () => {
    const file = join(dir, 'many.yaml');
    writeFileSync(file, 'server: { port: -1 }\nsearch: { default_limit: 0 }\nembeding: {}\n');
    let message = '';
    try {
      loadConfig({ file, env: { CAIRN_SERACH_KEYWORD: 'x', CAIRN_BUDGET_CALLS_PER_TURN: 'lots' } });
    } catch (err) {
      message = (err as Error).message;
    }
    const lines = message.split('\n');
    expect(lines).toContain('CAIRN_SERACH_KEYWORD is not a Cairn setting; did you mean CAIRN_SEARCH_KEYWORD?');
    for (const key of ['server.port', 'search.default_limit', 'budget.calls_per_turn']) {
      expect(
        lines.some((l) => l.startsWith(`invalid config at ${key}: `)),
        key,
      ).toBe(true);
    }
    expect(
      lines.some((l) => l.startsWith('invalid config: unknown field ')),
      'unknown key of the file',
    ).toBe(true);
    expect(lines).toHaveLength(5);
  });
});
