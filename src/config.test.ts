import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from './config.js';

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

  it('names the exact key and reason of a bad value', () => {
    expect(() => parseConfig({ data_dir: dir, embedding: { provider: 'openai_compatible', model: 'm', dimensions: 8 } })).toThrow(
      'invalid config at embedding.base_url: required when provider is openai_compatible',
    );
    expect(() => parseConfig({ data_dir: dir, embedding: { dimensions: -3 } })).toThrow(/^invalid config at embedding\.dimensions: /);
    expect(() => parseConfig({ data_dir: dir, embeding: {} })).toThrow(/invalid config at \(root\): .*embeding/);
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
});
