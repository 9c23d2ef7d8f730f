import { describe, expect, it } from 'vitest';
import { HashEmbedder } from '../embed/hash-embedder.js';
import { OpenAIEmbedder } from '../embed/openai-embedder.js';
import { staticCatalog } from './catalog.js';
import { HybridToolSearch } from './hybrid-search.js';

// The hash embedder's vectors are hashed analysed tokens: tools are similar exactly when they share words.
const entry = (name: string, description: string) => ({ name, description, inputSchema: { type: 'object', properties: {} } });
const catalog = staticCatalog([
  entry('get_weather', 'Current weather conditions for a city'),
  entry('send_email', 'Send an email message to a recipient'),
  entry('create_invoice', 'Create a billing invoice for a customer'),
  entry('list_invoices', 'List the invoices of a customer'),
]);
const names = (tools: { name: string }[]) => tools.map((t) => t.name);

describe('HybridToolSearch', () => {
  it('similar: the vector path alone, most similar first, above the floor and within the limit', async () => {
    const search = new HybridToolSearch(new HashEmbedder(256), () => {}, { minSimilarity: 0.1 });
    const found = await search.similar(catalog, 'customer invoice', 5);
    expect(names(found).slice(0, 2).sort()).toEqual(['create_invoice', 'list_invoices']);
    expect(names(found)).not.toContain('get_weather');
    expect(await search.similar(catalog, 'customer invoice', 1)).toHaveLength(1);
  });

  it('at a weak weight keyword matches keep their order and similar tools follow them', async () => {
    const search = new HybridToolSearch(new HashEmbedder(256), () => {}, { weight: 0.01, minSimilarity: 0.1 });
    const lexical = names(catalog.search('weather city', 4, 'rank'));
    const hybrid = names(await search.search(catalog, 'weather city', 4, 'rank'));
    expect(hybrid.slice(0, lexical.length)).toEqual(lexical);
    // Strict admission abstains on a word no tool holds; the vectors still answer from the words it shares.
    expect(catalog.search('weather forecast', 4, 'strict')).toEqual([]);
    expect(names(await search.search(catalog, 'weather forecast', 4, 'strict'))[0]).toBe('get_weather');
  });

  it('answers with keywords alone when the embedder fails, and says so', async () => {
    const warnings: string[] = [];
    const unreachable = new OpenAIEmbedder({ baseUrl: 'http://127.0.0.1:1/v1', model: 'm', dimensions: 8, maxRetries: 0, timeoutMs: 2_000 });
    const search = new HybridToolSearch(unreachable, (m) => warnings.push(m));
    expect(names(await search.search(catalog, 'send email', 3))).toEqual(names(catalog.search('send email', 3)));
    expect(warnings.join('\n')).toMatch(/embedding path failed, answering with keywords only/);
  });
});
