// Type-level tests of `cairn-memory/client`, checked by `npm run typecheck` (never run): every
// `@ts-expect-error` line must be a compile error. The types come from the generated openapi-types.gen.ts.
import { CairnHttpError, type CairnClient, type Memory } from '../src/client/index.js';

export async function clientTypeChecks(client: CairnClient): Promise<void> {
  const { id } = await client.memories.create({ content: 'Prefers tea', type: 'persona', priority: 60 });
  // @ts-expect-error no such memory type
  await client.memories.create({ content: 'x', type: 'friend' });
  // @ts-expect-error content is required
  await client.memories.create({ type: 'persona' });
  // @ts-expect-error misspelled field (bodies are strict on the server, and so are the types)
  await client.memories.update(id, { prioirty: 1 });

  const memory: Memory = await client.memories.get(id);
  const version: number = memory.version;
  // @ts-expect-error the wire's names are snake_case
  void memory.sceneName;
  void version;

  await client.memories.list({ type: 'episodic', limit: 10, include_superseded: 'true' });
  // @ts-expect-error misspelled query parameter
  await client.memories.list({ limt: 10 });
  const found = await client.conversations.search({ query: 'tea', session_key: 's1' });
  const strategy: 'hybrid' | 'embedding' | 'fts' | 'none' = found.strategy;
  void strategy;
  // @ts-expect-error misspelled parameter
  await client.conversations.search({ query: 'tea', sessionKey: 's1' });
  // @ts-expect-error role must be one of the message roles
  await client.conversations.add({ session_key: 's1', messages: [{ role: 'robot', content: 'x' }] });

  const tools = await client.listTools({ type: 'wiki' });
  const name: string | undefined = tools[0]?.name;
  void name;
  // @ts-expect-error no such tool type
  await client.listTools({ type: 'slides' });
  const answer = await client.callTool('search', { query: 'deploy' }, { knowledgeId: 'wiki-1a2b3c4d' });
  void answer.content;

  // The escape hatch is typed by path.
  // @ts-expect-error no such route
  await client.api.GET('/v1/nothing');

  try {
    await client.health();
  } catch (err) {
    if (err instanceof CairnHttpError) {
      const status: number = err.status;
      // @ts-expect-error not a Cairn error code
      if (err.code === 'teapot') void status;
    }
  }
}
