import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { call, FIXTURES, KnowledgeHarness, type Answer } from './fixtures/knowledge/harness.js';

const harness = new KnowledgeHarness();
let cairn: Cairn;
let id: string;

beforeAll(async () => {
  cairn = await harness.cairn();
  id = await harness.ready(cairn, 'code', FIXTURES.code);
});
afterAll(() => harness.cleanup());

const ids = (list: { id: string }[]) => list.map((x) => x.id);

describe('code graph resource', () => {
  it('indexes TypeScript and JavaScript with the compiler API: files, symbols, edges', async () => {
    expect(id).toMatch(/^cg-[0-9a-f]{8}$/);
    const info = await call(cairn, id, 'get_info');
    expect(info).toMatchObject({ knowledge_id: id, type: 'code', name: 'ts-project', status: 'ready' });
    expect(info.stats).toMatchObject({ files: 10, class: 3, interface: 1, function: 5, method: 9, route: 2, type: 2, variable: 1 });
    expect(info.summary).toMatch(/^10 source file\(s\), 23 symbol\(s\) \(3 classes, 1 interfaces, 5 functions, 9 methods, 2 routes\)/);
  });

  it('search returns locations; an exact name ranks first; kind filters', async () => {
    const exact = await call(cairn, id, 'search', { query: 'formatUser' });
    expect(exact.results[0]).toMatchObject({
      id: 'src/format.ts#formatUser',
      name: 'formatUser',
      kind: 'function',
      file: 'src/format.ts',
      line: 13,
      end_line: 15,
      signature: 'export function formatUser(user: User): string',
      exported: true,
    });
    // camelCase is split and stemmed: "saving users" finds saveUser first.
    const words = await call(cairn, id, 'search', { query: 'saving users' });
    expect(words.results[0].id).toBe('src/user-repository.ts#UserRepository.saveUser');
    const classes = await call(cairn, id, 'search', { query: 'repository', kind: 'class' });
    expect(ids(classes.results)).toEqual(['src/base-repository.ts#BaseRepository', 'src/user-repository.ts#UserRepository']);
    const routes = await call(cairn, id, 'search', { query: 'users', kind: 'route' });
    expect(routes.results[0]).toMatchObject({ id: 'src/routes.ts#POST /users', kind: 'route', line: 16 });
    expect((await call(cairn, id, 'search', { query: 'user', limit: 2 })).results).toHaveLength(2);
  });

  it('explore returns the most relevant files with the source of their matching symbols', async () => {
    const answer = await call(cairn, id, 'explore', { query: 'normalize user name', max_files: 2 });
    expect(answer.files).toHaveLength(2);
    expect(answer.files[0].path).toBe('src/format.ts');
    expect(answer.files[0].symbols.map((s: { name: string }) => s.name)).toContain('normalizeName');
    const code = answer.files[0].sources.map((s: { code: string }) => s.code).join('\n');
    expect(code).toContain('export function normalizeName(name: string): string {');
    expect(code).toContain('.map((word) => word.charAt(0).toUpperCase() + word.slice(1))');
  });

  it('callers: resolved across files, through a barrel re-export, with call sites', async () => {
    const answer = await call(cairn, id, 'callers', { symbol: 'formatUser' });
    expect(answer.symbol.id).toBe('src/format.ts#formatUser');
    // app.ts imports formatUser from './index.js' (export *); the call still resolves to format.ts.
    expect(answer.callers.map((c: Answer) => [c.id, c.via, c.sites])).toEqual([
      ['src/app.ts#registerUser', ['calls'], [10]],
      ['src/user-repository.ts#UserRepository.saveUser', ['calls'], [8]],
    ]);
    const normalize = await call(cairn, id, 'callers', { symbol: 'src/format.ts#normalizeName' });
    expect(ids(normalize.callers)).toEqual(['src/format.ts#formatUser', 'src/legacy.js#legacyGreeting']);
  });

  it('callees: project symbols (calls, then references) and calls into packages', async () => {
    const answer = await call(cairn, id, 'callees', { symbol: 'registerUser' });
    expect(answer.external).toEqual([{ name: 'randomUUID', module: 'node:crypto', line: 7 }]);
    expect(answer.callees.map((c: Answer) => [c.id, c.via[0]])).toEqual([
      ['src/format.ts#formatUser', 'calls'],
      ['src/memory-store.ts#MemoryStore', 'calls'],
      ['src/user-repository.ts#UserRepository', 'calls'],
      ['src/user-repository.ts#UserRepository.saveUser', 'calls'],
      ['src/types.ts#User', 'references'],
    ]);
    // The route's handler calls registerUser; registering it calls `router.post` (a method of the `router` object).
    const route = await call(cairn, id, 'callees', { symbol: 'POST /users' });
    expect(route.callees.map((c: Answer) => [c.id, c.via])).toEqual([
      ['src/app.ts#registerUser', ['calls']],
      ['src/routes.ts#router', ['calls', 'references']],
    ]);
    expect(ids((await call(cairn, id, 'callees', { symbol: 'main' })).callees)).toEqual(['src/app.ts#registerUser']);
  });

  it('ambiguous names are reported with their candidates, never guessed', async () => {
    const answer = await call(cairn, id, 'callers', { symbol: 'save' });
    expect(answer).toMatchObject({ ambiguous: true, symbol: 'save' });
    expect(ids(answer.candidates)).toEqual(['src/memory-store.ts#MemoryStore.save', 'src/store.ts#Store.save']);
    expect((await call(cairn, id, 'impact', { symbol: 'describe' })).ambiguous).toBe(true);
    // A file, a line or a qualified name picks one.
    expect((await call(cairn, id, 'callers', { symbol: 'save', file: 'store.ts' })).symbol.id).toBe('src/store.ts#Store.save');
    expect((await call(cairn, id, 'callers', { symbol: 'save', line: 8 })).symbol.id).toBe('src/memory-store.ts#MemoryStore.save');
    expect((await call(cairn, id, 'callers', { symbol: 'Store.save' })).symbol.id).toBe('src/store.ts#Store.save');
    const unknown = await call(cairn, id, 'node', { symbol: 'formatUsr' });
    expect(unknown).toMatchObject({ found: false, symbol: 'formatUsr' });
  });

  it('impact at depth 1: direct dependents, including a re-exporting barrel', async () => {
    const answer = await call(cairn, id, 'impact', { symbol: 'normalizeName', depth: 1 });
    expect(answer.nodes.map((n: Answer) => [n.id, n.distance])).toEqual([
      ['src/format.ts#formatUser', 1],
      ['src/index.ts', 1],
      ['src/legacy.js', 1],
      ['src/legacy.js#legacyGreeting', 1],
    ]);
    expect(answer.paths).toEqual([
      { symbols: ['src/format.ts#normalizeName', 'src/format.ts#formatUser'], via: ['calls'] },
      { symbols: ['src/format.ts#normalizeName', 'src/legacy.js'], via: ['imports'] },
      { symbols: ['src/format.ts#normalizeName', 'src/legacy.js#legacyGreeting'], via: ['calls'] },
      { symbols: ['src/format.ts#normalizeName', 'src/index.ts'], via: ['exports'] },
    ]);
    expect(answer.files.map((f: Answer) => f.file)).toEqual(['src/format.ts', 'src/index.ts', 'src/legacy.js']);
  });

  it('impact at depth 2 (the default): every path through the call chain to other files', async () => {
    const answer = await call(cairn, id, 'impact', { symbol: 'normalizeName' });
    expect(answer.depth).toBe(2);
    const paths = answer.paths.map((p: Answer) => p.symbols.slice(1).join(' <- '));
    expect(paths).toEqual(
      expect.arrayContaining([
        'src/format.ts#formatUser <- src/app.ts#registerUser',
        'src/format.ts#formatUser <- src/user-repository.ts#UserRepository.saveUser',
        'src/format.ts#formatUser <- src/app.ts',
        'src/legacy.js#legacyGreeting',
      ]),
    );
    // The import of formatUser in app.ts passes through the barrel; the edge says so.
    expect(answer.edges).toContainEqual({ from: 'src/app.ts', to: 'src/format.ts#formatUser', kind: 'imports', through: ['src/index.ts'] });
    expect(answer.files.map((f: Answer) => [f.file, f.distance])).toEqual([
      ['src/format.ts', 1],
      ['src/index.ts', 1],
      ['src/legacy.js', 1],
      ['src/app.ts', 2],
      ['src/user-repository.ts', 2],
    ]);
  });

  it('impact follows dispatch: an implementation reaches callers of the interface method', async () => {
    const answer = await call(cairn, id, 'impact', { symbol: 'MemoryStore.save', depth: 2 });
    expect(answer.paths).toEqual([
      { symbols: ['src/memory-store.ts#MemoryStore.save', 'src/store.ts#Store.save', 'src/user-repository.ts#UserRepository.saveUser'], via: ['dispatch', 'calls'] },
    ]);
    const override = await call(cairn, id, 'impact', { symbol: 'UserRepository.describe', depth: 2 });
    expect(override.paths[0]).toEqual({
      symbols: ['src/user-repository.ts#UserRepository.describe', 'src/base-repository.ts#BaseRepository.describe', 'src/base-repository.ts#BaseRepository.key'],
      via: ['dispatch', 'calls'],
    });
  });

  it('node: signature, docs, location, members, counts and optionally the code', async () => {
    const cls = await call(cairn, id, 'node', { symbol: 'UserRepository' });
    expect(cls).toMatchObject({
      id: 'src/user-repository.ts#UserRepository',
      kind: 'class',
      signature: 'export class UserRepository extends BaseRepository',
      doc: 'Users, persisted through a Store.',
      line: 6,
      end_line: 14,
      exported: true,
    });
    expect(ids(cls.members)).toEqual(['src/user-repository.ts#UserRepository.saveUser', 'src/user-repository.ts#UserRepository.describe']);
    expect(cls.code).toBeUndefined();
    const fn = await call(cairn, id, 'node', { symbol: 'normalizeName', include_code: true });
    expect(fn.doc).toBe('Collapses whitespace and capitalises each word of a name.');
    expect(fn.code).toMatch(/^export function normalizeName\(name: string\): string \{\n[\s\S]*\n\}$/);
    // formatUser, legacyGreeting and the import in legacy.js.
    expect(fn.callers).toBe(3);
    const file = await call(cairn, id, 'node', { symbol: 'src/index.ts' });
    expect(file).toMatchObject({ kind: 'file' });
    expect(file.imports).toEqual([
      { specifier: './user-repository.js', file: 'src/user-repository.ts' },
      { specifier: './format.js', file: 'src/format.ts' },
      { specifier: './types.js', file: 'src/types.ts' },
    ]);
  });

  it('status reports the state, counts and what the last sync re-indexed', async () => {
    const status = await call(cairn, id, 'status');
    expect(status).toMatchObject({ status: 'ready', syncing: false, error: null });
    expect(status.last_sync.reindexed).toHaveLength(10);
    expect(status.last_sync.unchanged).toBe(0);
  });

  it('files: tree, flat and grouped, filtered by path prefix and glob', async () => {
    const tree = await call(cairn, id, 'files');
    expect(tree.format).toBe('tree');
    expect(tree.tree.split('\n')[0]).toBe('src/');
    expect(tree.tree).toContain('  format.ts (2 symbols, 16 lines)');
    const flat = await call(cairn, id, 'files', { format: 'flat', pattern: '*.js' });
    expect(flat.files).toEqual([{ path: 'src/legacy.js', language: 'js', lines: 7, symbols: 1 }]);
    const grouped = await call(cairn, id, 'files', { format: 'grouped', path: 'src', pattern: 'src/*-store.ts' });
    expect(grouped.groups).toEqual([{ dir: 'src', files: [{ name: 'memory-store.ts', language: 'ts', lines: 15, symbols: 3 }] }]);
    expect((await call(cairn, id, 'files', { path: 'lib' })).total).toBe(0);
  });
});
