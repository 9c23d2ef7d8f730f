export {
  Cairn,
  createCairn,
  defaultScope,
  type CairnOptions,
  type EmbeddingStatus,
  type ListMemoriesInput,
  type ListMessagesInput,
  type ConversationSearchInput,
  type MemorySearchInput,
  type RecallInput,
  type RecallResult,
  type TurnRef,
  type TurnSearchResult,
  type CreatedApiKey,
  type ApiKey,
  type MemorySources,
  type PipelineStatus,
  type ExtractionRun,
} from './cairn.js';
export { loadConfig, parseConfig, configSchema, type CairnConfig, type CairnConfigInput } from './config.js';
export { CairnError, isCairnError, type CairnErrorCode } from './errors.js';
export { createApp as createHttpApp, type AppOptions } from './http/app.js';
export { startServer, type ServeOptions, type RunningServer } from './http/server.js';
export { createMcpServer, DEFAULT_TOOLS } from './mcp/mcp-server.js';
export type { ToolCaller, ToolContext, ToolRegistration } from './mcp/tool-context.js';
export type { Embedder } from './embed/embedder.js';
export type { Store, StoreCapabilities } from './store/store.js';
export type { ConversationHit, ConversationSearchResult } from './memory/conversation-search.js';
export type { MemoryHit, MemorySearchResult } from './memory/memory-search.js';
export { rrfFuse, RRF_K } from './search/rrf.js';
export { analyze } from './text/analyze.js';
export * from './types.js';
