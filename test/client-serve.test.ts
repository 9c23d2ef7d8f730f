import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, type ServeProcess } from './e2e-process.js';

// `cairn-memory/client` against a real `cairn serve` (the built CLI and the built client: `npm run build`
// first, as `npm test` does): the README's Client example word for word, and how the package exposes it.
const root = join(import.meta.dirname, '..');
const example = readFileSync(join(root, 'examples/client.mjs'), 'utf8');
let data: string;
let server: ServeProcess;

beforeAll(async () => {
  data = mkdtempSync(join(tmpdir(), 'cairn-client-e2e-'));
  server = await startServe(['--port', '0', '--data', data]);
});
afterAll(async () => {
  await server?.stop();
  rmSync(data, { recursive: true, force: true });
});

describe('the README Client example', () => {
  it('is shown in the README verbatim and imports the client by the package subpath', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme).toContain('```js\n' + example + '```');
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; exports: Record<string, unknown> };
    expect(example).toContain(`from '${pkg.name}/client';`);
    expect(pkg.exports['./client']).toEqual({ types: './dist/client/index.d.ts', default: './dist/client/index.js' });
  });

  it('runs against a real cairn serve and prints what the server answered', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [join(root, 'examples/client.mjs'), server.url], { cwd: root });
    expect(stdout.split('\n')).toEqual([
      'health: ok',
      'conversation_search: 2 message(s) (fts)',
      'recall: the context to inject names the window seats',
      'tools: get_info, search, list_pages, read_page, get_graph, list_raw, read_raw',
      'search: Deploy',
      'refused: 404 not_found: memory no-such-memory not found',
      '',
    ]);
    // What it wrote is on the server: the exchange stays, the memory and the wiki it removed are gone.
    const headers = { 'x-cairn-user-id': 'alice', 'x-cairn-agent-id': 'travel-agent' };
    const messages = (await (await fetch(`${server.url}/v1/conversations?session_key=trip`, { headers })).json()) as { messages: { content: string }[] };
    expect(messages.messages.map((m) => m.content)).toEqual(['I am vegetarian, book me a table in Lisbon', 'Booked for 8 pm.']);
    const memories = (await (await fetch(`${server.url}/v1/memories`, { headers })).json()) as { memories: { content: string; extractor: string }[] };
    expect(memories.memories.filter((m) => m.extractor === 'manual')).toEqual([]);
    expect(((await (await fetch(`${server.url}/v1/knowledge`, { headers })).json()) as { resources: unknown[] }).resources).toEqual([]);
  });
});

describe('the built client', () => {
  it('loads none of the server: only the client, the error codes, the header names and openapi-fetch', () => {
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const source = readFileSync(file, 'utf8');
      for (const [, spec] of source.matchAll(/^(?:import|export)[^'"]*from '([^']+)';$/gm)) {
        if (spec!.startsWith('.')) visit(join(file, '..', spec!));
        else seen.add(spec!);
      }
    };
    visit(join(root, 'dist/client/index.js'));
    const loaded = [...seen].map((f) => (f.startsWith(root) ? f.slice(root.length + 1) : f)).sort();
    expect(loaded).toEqual([
      'dist/client/cairn-client.js',
      'dist/client/client-error.js',
      'dist/client/index.js',
      'dist/client/retry.js',
      'dist/errors.js',
      'dist/http/caller.js',
      'dist/http/error-response.js',
      'openapi-fetch',
    ]);
  });
});
