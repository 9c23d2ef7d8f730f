import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILTIN_GUIDES } from './builtin-guides.js';
import { Guides } from './guides.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('Guides', () => {
  it('has the eleven built-in topics, each a non-trivial rule set', () => {
    const guides = new Guides(undefined, () => {});
    expect(guides.topics()).toHaveLength(11);
    for (const text of Object.values(BUILTIN_GUIDES)) expect(text.trim().length).toBeGreaterThan(300);
  });

  it('a configured folder adds topics and overrides built-in ones; other files are ignored', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-guides-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'deploy.md'), '\n# Deploy\nShip on Tuesdays.\n');
    writeFileSync(join(dir, 'tool_error.md'), 'Our own recovery rules.');
    writeFileSync(join(dir, 'notes.txt'), 'not a guide');
    writeFileSync(join(dir, 'empty.md'), '   ');
    const guides = new Guides(dir, () => {});
    expect(guides.topics()).toContain('deploy');
    expect(guides.topics()).not.toContain('notes');
    expect(guides.topics()).not.toContain('empty');
    expect(guides.read({ topics: ['tool_error', 'deploy'] }).text).toBe('## tool_error\n\nOur own recovery rules.\n\n## deploy\n\n# Deploy\nShip on Tuesdays.');
  });

  it('a missing folder is reported and the built-in guides still answer', () => {
    const warnings: string[] = [];
    const guides = new Guides('/nonexistent/cairn-guides', (m) => warnings.push(m));
    expect(guides.read({ topics: ['figure'] }).topics).toEqual(['figure']);
    expect(warnings[0]).toMatch(/cannot read guides_dir \/nonexistent\/cairn-guides/);
  });

  it('names of Object.prototype members are no topics, neither built in nor as aliases', () => {
    const guides = new Guides(undefined, () => {});
    for (const name of ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty']) {
      expect(() => guides.read({ topics: [name] })).toThrow(`unknown topic "${name}"`);
    }
    expect(guides.read({ topics: ['toString', 'figure'] })).toMatchObject({ topics: ['figure'], unknown: ['toString'] });
    expect(guides.topics()).not.toContain('constructor');
  });
});
