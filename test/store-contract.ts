import { describe } from 'vitest';
import type { Store } from '../src/store/store.js';
import { concurrencyContract } from './store-contract/concurrency.js';
import { contractContext } from './store-contract/context.js';
import { embeddingContract } from './store-contract/embeddings.js';
import { errorContract } from './store-contract/errors.js';
import { keyContract } from './store-contract/keys.js';
import { knowledgeContract } from './store-contract/knowledge.js';
import { memoryContract } from './store-contract/memories.js';
import { messageContract } from './store-contract/messages.js';
import { pipelineContract } from './store-contract/pipeline.js';
import { proxyTurnContract } from './store-contract/proxy-turns.js';
import { runContract } from './store-contract/runs.js';
import { transferContract } from './store-contract/transfer.js';

/**
 * The behaviour every Store backend must show, one part per aggregate (test/store-contract/), each
 * method of each one, tenant isolation of every scoped method, and the races a backend with parallel
 * connections must win (concurrency.ts). It uses the Store interface only. Each backend's test file
 * calls it with a factory that returns a fresh, empty store; `backup` is backend-specific and tested
 * in each backend's own file.
 */
export function runStoreContract(name: string, open: () => Promise<Store>): void {
  describe(`Store contract: ${name}`, () => {
    const ctx = contractContext(open);
    describe('messages', () => messageContract(ctx));
    describe('memories', () => memoryContract(ctx));
    describe('embeddings', () => embeddingContract(ctx));
    describe('keys', () => keyContract(ctx));
    describe('pipeline', () => pipelineContract(ctx));
    describe('runs', () => runContract(ctx));
    describe('error records', () => errorContract(ctx));
    describe('knowledge', () => knowledgeContract(ctx));
    describe('proxy turns', () => proxyTurnContract(ctx));
    describe('transfer', () => transferContract(ctx));
    describe('concurrency', () => concurrencyContract(ctx));
  });
}
