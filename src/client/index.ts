// `cairn-memory/client`: a typed HTTP client for a remote Cairn. It imports nothing of the server but the
// error codes and header names, so it runs wherever fetch does.
export {
  CairnClient,
  type Answer,
  type CairnClientOptions,
  type CallOptions,
  type ErrorBody,
  type Health,
  type KnowledgeResource,
  type Memory,
  type MemoryPatch,
  type Message,
  type NewMemory,
  type Query,
  type RecallAnswer,
  type RequestBody,
  type SearchAnswer,
  type Tool,
  type ToolAnswer,
  type ToolFilter,
} from './cairn-client.js';
export { CairnHttpError } from './client-error.js';
export { CairnError, isCairnError, type CairnErrorCode } from '../errors.js';
export type { components, operations, paths } from './openapi-types.gen.js';
