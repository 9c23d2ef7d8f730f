import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { call, FIXTURES, KnowledgeHarness } from './fixtures/knowledge/harness.js';

const harness = new KnowledgeHarness();
let cairn: Cairn;
let id: string;

beforeAll(async () => {
  cairn = await harness.cairn();
  id = await harness.ready(cairn, 'wiki', FIXTURES.wiki);
});
afterAll(() => harness.cleanup());

describe('wiki resource', () => {
  it('gets an id, a name and a summary; get_info reports counts', async () => {
    expect(id).toMatch(/^wiki-[0-9a-f]{8}$/);
    const info = await call(cairn, id, 'get_info');
    expect(info).toMatchObject({ knowledge_id: id, type: 'wiki', name: 'wiki', status: 'ready', root: FIXTURES.wiki });
    expect(info.stats).toEqual({ pages: 6, raw_files: 7, links: 9, unresolved_links: 1, groups: 1 });
    expect(info.summary).toMatch(/^6 Markdown page\(s\), 9 link\(s\); main pages: Architecture; Team Handbook/);
  });

  it('search ranks pages with BM25 and shows the matching line and its section', async () => {
    const answer = await call(cairn, id, 'search', { query: 'installing the command line' });
    expect(answer.results[0]).toMatchObject({
      id: 'getting-started',
      path: 'getting-started.md',
      title: 'Getting Started',
      section: 'Setup for new engineers',
      line: 7,
      snippet: 'New engineers install the command-line tool first.',
    });
  });

  it('search stems English: "writers waiting" finds "Writers wait"', async () => {
    const answer = await call(cairn, id, 'search', { query: 'writers waiting', limit: 1 });
    expect(answer.results).toHaveLength(1);
    expect(answer.results[0]).toMatchObject({ id: 'architecture', section: 'Storage' });
    expect(answer.results[0].snippet).toContain('Writers wait on a busy timeout');
  });

  it('search segments Chinese (jieba): a Chinese query finds the Chinese page first', async () => {
    const answer = await call(cairn, id, 'search', { query: '知识库搜索' });
    expect(answer.results[0]).toMatchObject({ id: 'zh/知识库', title: '知识库简介' });
    expect(answer.results[0].snippet).toContain('搜索使用分词后的关键词排序');
  });

  it('search respects limit (default 20) and answers an unknown word with nothing', async () => {
    expect((await call(cairn, id, 'search', { query: 'handbook', limit: 1 })).results).toHaveLength(1);
    expect((await call(cairn, id, 'search', { query: 'handbook' })).results.length).toBeGreaterThan(1);
    expect(await call(cairn, id, 'search', { query: 'zyxwvut' })).toEqual({ query: 'zyxwvut', total: 0, results: [] });
  });

  it('list_pages: titles from the first heading, front matter or file name, with link counts', async () => {
    const answer = await call(cairn, id, 'list_pages');
    expect(answer.total).toBe(6);
    const byId = Object.fromEntries(answer.pages.map((p: { id: string }) => [p.id, p]));
    // Front matter beats the first heading.
    expect(byId['getting-started']).toMatchObject({ title: 'Getting Started', headings: 3, links_out: 2, links_in: 1 });
    expect(byId['architecture']).toMatchObject({ title: 'Architecture', links_out: 1, links_in: 3 });
    expect(byId['orphan']).toMatchObject({ title: 'Orphan notes', links_out: 0, links_in: 0 });
    expect((await call(cairn, id, 'list_pages', { prefix: 'guides/' })).pages.map((p: { id: string }) => p.id)).toEqual(['guides/deploy']);
  });

  it('read_page by id, path or title; a section returns only that heading', async () => {
    const answer = await call(cairn, id, 'read_page', { refs: ['architecture', 'guides/deploy.md', 'Getting Started', 'nope'] });
    expect(answer.pages.map((p: { id: string }) => p.id)).toEqual(['architecture', 'guides/deploy', 'getting-started']);
    expect(answer.missing).toEqual(['nope']);
    expect(answer.pages[0].content).toMatch(/^# Architecture\n/);
    expect(answer.pages[0].headings).toEqual([
      { depth: 1, text: 'Architecture', line: 1 },
      { depth: 2, text: 'Storage', line: 5 },
      { depth: 2, text: 'Search', line: 9 },
    ]);
    const section = await call(cairn, id, 'read_page', { refs: ['architecture'], section: 'storage' });
    expect(section.pages[0].section).toEqual({ text: 'Storage', depth: 2, line: 5 });
    expect(section.pages[0].content).toBe('## Storage\n\nData lives in one SQLite file in WAL mode. Writers wait on a busy timeout; readers never block.');
    const missing = await call(cairn, id, 'read_page', { refs: ['architecture'], section: 'Deployment' });
    expect(missing.pages[0]).toMatchObject({ content: null, section_missing: 'Deployment' });
  });

  it('get_graph: wikilinks and relative links as edges, broken links, groups and isolated pages', async () => {
    const graph = await call(cairn, id, 'get_graph');
    expect(graph.nodes).toHaveLength(6);
    expect(graph.edges).toContainEqual({ source: 'index', target: 'getting-started', kind: 'wikilink' });
    expect(graph.edges).toContainEqual({ source: 'index', target: 'guides/deploy', kind: 'link' });
    expect(graph.edges).toContainEqual({ source: 'guides/deploy', target: 'index', kind: 'link' });
    // [[Architecture#Storage]] links the page; [[index|handbook]] uses the alias; [[知识库]] resolves by file name.
    expect(graph.edges).toContainEqual({ source: 'getting-started', target: 'architecture', kind: 'wikilink' });
    expect(graph.edges).toContainEqual({ source: 'architecture', target: 'index', kind: 'wikilink' });
    expect(graph.edges).toContainEqual({ source: 'index', target: 'zh/知识库', kind: 'wikilink' });
    // External URLs and [[links]] inside code are not edges.
    expect(graph.edges).toHaveLength(9);
    expect(graph.unresolved).toEqual([{ source: 'guides/deploy', target: 'Missing Page', kind: 'wikilink' }]);
    expect(graph.groups).toEqual([{ size: 5, pages: ['architecture', 'getting-started', 'guides/deploy', 'index', 'zh/知识库'] }]);
    expect(graph.isolated).toEqual(['orphan']);
  });

  it('get_graph around a page keeps the pages within depth links', async () => {
    const near = await call(cairn, id, 'get_graph', { ref: 'guides/deploy' });
    expect(near.nodes.map((n: { id: string }) => n.id).sort()).toEqual(['guides/deploy', 'index']);
    const two = await call(cairn, id, 'get_graph', { ref: 'guides/deploy', depth: 2 });
    expect(two.nodes).toHaveLength(5);
    expect(await call(cairn, id, 'get_graph', { ref: 'nowhere' })).toEqual({ missing: 'nowhere' });
  });

  it('list_raw lists every source file; read_raw returns text verbatim and reports binary files', async () => {
    const raw = await call(cairn, id, 'list_raw');
    expect(raw.files.map((f: { path: string }) => f.path)).toEqual([
      'architecture.md',
      'assets/diagram.png',
      'getting-started.md',
      'guides/deploy.md',
      'index.md',
      'orphan.md',
      'zh/知识库.md',
    ]);
    expect(raw.files[1]).toMatchObject({ path: 'assets/diagram.png', bytes: 20, page: null, text: false });
    const read = await call(cairn, id, 'read_raw', { filenames: ['getting-started.md', 'assets/diagram.png', '../secret.txt'] });
    expect(read.files[0].content).toMatch(/^---\ntitle: Getting Started\n/);
    expect(read.files[1]).toEqual({ path: 'assets/diagram.png', bytes: 20, binary: true, content: null, truncated: false });
    // Only indexed files can be read: a path outside the folder is simply unknown.
    expect(read.missing).toEqual(['../secret.txt']);
  });
});
