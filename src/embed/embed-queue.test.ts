import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { EmbedQueue } from './embed-queue.js';
import { HashEmbedder } from './hash-embedder.js';

const scope = { userId: 'u', agentId: 'a' };
const message = (id: string, content: string) => ({ id, scope, sessionKey: 's', role: 'user' as const, content });

describe('EmbedQueue.depth', () => {
  it('counts the rows without a vector, shares one count between concurrent callers, and counts again once caught up', async () => {
    const store = SqliteStore.open({ path: ':memory:' });
    const queue = new EmbedQueue(store, new HashEmbedder(32));
    try {
      await store.messages.addMessages([message('m1', 'green tea ceremony'), message('m2', 'espresso machine repair')]);
      const first = queue.depth();
      // Callers in the same moment (a status endpoint polled by many clients) share one count.
      expect(queue.depth()).toBe(first);
      expect(await first).toBe(2);

      queue.start();
      expect(await queue.drain(30_000)).toBe(true);
      // The count taken before the queue caught up is not answered after it.
      expect(await queue.depth()).toBe(0);
    } finally {
      await queue.stop();
      await store.close();
    }
  });
});
