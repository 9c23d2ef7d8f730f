import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { HashEmbedder } from '../embed/hash-embedder.js';
import { OpenAIEmbedder } from '../embed/openai-embedder.js';
import { staticCatalog } from './catalog.js';
import { HybridToolSearch, type ToolMatch } from './hybrid-search.js';

// The hash embedder's vectors are hashed analysed tokens: tools are similar exactly when they share words.
const entry = (name: string, description: string) => ({ name, description, inputSchema: { type: 'object', properties: {} } });
const catalog = staticCatalog([
  entry('get_weather', 'Current weather conditions for a city'),
  entry('send_email', 'Send an email message to a recipient'),
  entry('create_invoice', 'Create a billing invoice for a customer'),
  entry('list_invoices', 'List the invoices of a customer'),
]);
const names = (tools: { name: string }[]) => tools.map((t) => t.name);
const labelled = (matches: ToolMatch[]) => matches.map((m) => [m.tool.name, m.match]);

describe('HybridToolSearch', () => {
  it('similar: the vector path alone, most similar first, above the floor and within the limit', async () => {
    const search = new HybridToolSearch(new HashEmbedder(256), () => {});
    const found = await search.similar(catalog, 'customer invoice', 5, 0.1);
    expect(names(found).slice(0, 2).sort()).toEqual(['create_invoice', 'list_invoices']);
    expect(names(found)).not.toContain('get_weather');
    expect(await search.similar(catalog, 'customer invoice', 1, 0.1)).toHaveLength(1);
  });

  it('keyword matches come first; tools found only by the vectors follow above the floor, labelled semantic', async () => {
    const search = new HybridToolSearch(new HashEmbedder(256), () => {}, { weight: 0.01, semanticFloor: 0.1 });
    // "send" is the rarest word (one tool): the keyword match; the invoice tools share only "invoice".
    expect(labelled(await search.search(catalog, 'send invoice', 4))).toEqual([
      ['send_email', 'keyword'],
      ['list_invoices', 'semantic'], // the shorter text is the closer one
      ['create_invoice', 'semantic'],
    ]);
    // A floor above every similarity leaves the keyword matches alone.
    const strict = new HybridToolSearch(new HashEmbedder(256), () => {}, { weight: 0.01, semanticFloor: 0.99 });
    expect(labelled(await strict.search(catalog, 'send invoice', 4))).toEqual([['send_email', 'keyword']]);
    // An exact name is labelled as such and pinned first.
    expect(labelled(await search.search(catalog, 'list_invoices', 1))).toEqual([['list_invoices', 'exact_name']]);
  });

  it('rank mode keeps the keyword order and lets similar tools follow it at a weak weight', async () => {
    const search = new HybridToolSearch(new HashEmbedder(256), () => {}, { weight: 0.01 });
    const lexical = names(catalog.search('weather city', 4, 'rank'));
    const hybrid = (await search.search(catalog, 'weather city', 4, { admission: 'rank' })).map((m) => m.tool.name);
    expect(hybrid.slice(0, lexical.length)).toEqual(lexical);
  });

  it('without an embedder it is keyword search, nothing is labelled semantic', async () => {
    const search = new HybridToolSearch(null, () => {});
    expect(search.semantic).toBe(false);
    const found = await search.search(catalog, 'send invoice', 4);
    expect(labelled(found)).toEqual([['send_email', 'keyword']]);
  });

  it('without a configured floor, serves on meaning alone only a tool that stands out from the catalog', async () => {
    // Forty unrelated tools and two that share the query's words; the hash embedder knows only shared words.
    const filler = Array.from({ length: 40 }, (_, i) => entry(`tool_${i}`, `Manage ${['reports', 'users', 'files', 'queues', 'alerts'][i % 5]} number ${i} for teams`));
    const big = staticCatalog([...filler, entry('refund_payment', 'Refund a card payment to the buyer'), entry('payment_status', 'Status of a card payment')]);
    const search = new HybridToolSearch(new HashEmbedder(256), () => {}, { weight: 0.01 });
    const semantic = (await search.search(big, 'card payment refund please', 5, { admission: 'strict' })).filter((m) => m.match === 'semantic');
    const all = await search.search(big, 'card payment refund please', 5);
    expect(all.map((m) => m.tool.name)).toContain('refund_payment');
    expect(semantic.map((m) => m.tool.name)).not.toContain('tool_3');
    // A query that shares nothing with any tool (and no hash bucket: every similarity is 0) stands out from nothing.
    expect((await search.search(big, 'volcano', 5)).filter((m) => m.match === 'semantic')).toEqual([]);
  });

  it('answers with keywords alone when the embedder fails, and says so', async () => {
    const warnings: string[] = [];
    const unreachable = new OpenAIEmbedder({ baseUrl: 'http://127.0.0.1:1/v1', model: 'm', dimensions: 8, maxRetries: 0, timeoutMs: 2_000 });
    const search = new HybridToolSearch(unreachable, (m) => warnings.push(m));
    expect((await search.search(catalog, 'send email', 3)).map((m) => m.tool.name)).toEqual(names(catalog.search('send email', 3)));
    expect(warnings.join('\n')).toMatch(/tool search: vector path failed, answering without it/);
  });

  it('answers with keywords alone when the embedding server never answers the query (queryTimeoutMs)', async () => {
    // An OpenAI-compatible server that takes every request and never responds.
    const held: IncomingMessage[] = [];
    const server = createServer((req) => void held.push(req));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      // The embedder's own request timeout is far longer than the test: only the query timeout can end the wait.
      const stuck = new OpenAIEmbedder({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', dimensions: 8, maxRetries: 0, timeoutMs: 3_600_000 });
      const warnings: string[] = [];
      const search = new HybridToolSearch(stuck, (m) => warnings.push(m), { queryTimeoutMs: 100 });
      expect((await search.search(catalog, 'send email', 3)).map((m) => m.tool.name)).toEqual(names(catalog.search('send email', 3)));
      expect(held.length).toBeGreaterThan(0);
      expect(warnings.join('\n')).toMatch(/tool search: vector path failed, answering without it/);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
