import createClient, { type Client } from 'openapi-fetch';
import { CALLER_HEADERS } from '../http/caller.js';
import { toClientError } from './client-error.js';
import type { components, operations, paths } from './openapi-types.gen.js';
import { retryingFetch } from './retry.js';

// Every type below is read from the types generated from openapi.json (openapi-types.gen.ts), never restated.
type Operation = keyof operations;
type JsonOf<T> = T extends { content: { 'application/json': infer B } } ? B : never;
/** The JSON request body of an operation. */
export type RequestBody<K extends Operation> = JsonOf<NonNullable<operations[K]['requestBody']>>;
/** The JSON answer of an operation for one status. */
export type Answer<K extends Operation, S extends number = 200> = S extends keyof operations[K]['responses'] ? JsonOf<operations[K]['responses'][S]> : never;
/** The query string of an operation. */
export type Query<K extends Operation> = NonNullable<operations[K]['parameters']['query']>;

export type Memory = Answer<'getMemory'>;
export type NewMemory = RequestBody<'createMemory'>;
export type MemoryPatch = RequestBody<'updateMemory'>;
export type Message = Answer<'listMessages'>['messages'][number];
export type SearchAnswer = Answer<'searchMemories'>;
export type RecallAnswer = Answer<'recall'>;
export type Tool = Answer<'listTools'>[number];
export type ToolFilter = RequestBody<'listTools'>;
export type ToolAnswer = Answer<'callTool'>;
export type KnowledgeResource = Answer<'getKnowledge'>;
export type Health = Answer<'getHealth'>;
/** Every error answer's body. */
export type ErrorBody = components['schemas']['Error'];

/** Options of {@link CairnClient}. */
export type CairnClientOptions = {
  /** Where the server is, e.g. `http://127.0.0.1:8420`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>` (auth.mode keys). */
  apiKey?: string;
  /** The scope's user (`x-cairn-user-id`); a key bound to a user sets it itself. */
  userId?: string;
  /** The scope's agent (`x-cairn-agent-id`); needed in keys mode unless the key is bound to an agent. */
  agentId?: string;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** The fetch to send with. Default `globalThis.fetch`. */
  fetch?: (request: Request) => Promise<Response>;
  /** Retries of a 503 `busy`/`unavailable` answer with `Retry-After`. Default 3. */
  retries?: number;
  /** The longest `Retry-After` waited for, in ms. Default 10 000. */
  maxRetryDelayMs?: number;
};

/** Per call: an abort signal and extra headers (`x-cairn-session-key` and `x-cairn-turn-id` for the search budget). */
export type CallOptions = { signal?: AbortSignal; headers?: Record<string, string> };

/**
 * A typed HTTP client for a remote Cairn (`cairn serve`): memories, conversations, recall, tools and knowledge,
 * over the REST routes. Every failure is thrown as a `CairnError` (an error answer as a `CairnHttpError` with
 * the server's code, message and status); `api` is the underlying openapi-fetch client, typed for every route.
 */
export class CairnClient {
  /** openapi-fetch over the generated `paths`: any route, typed, with the client's headers and retries. */
  readonly api: Client<paths>;

  constructor(options: CairnClientOptions) {
    const headers: Record<string, string> = { ...options.headers };
    if (options.apiKey !== undefined) headers.authorization = `Bearer ${options.apiKey}`;
    if (options.userId !== undefined) headers[CALLER_HEADERS.user] = options.userId;
    if (options.agentId !== undefined) headers[CALLER_HEADERS.agent] = options.agentId;
    const send = options.fetch ?? ((request: Request) => globalThis.fetch(request));
    this.api = createClient<paths>({
      baseUrl: options.baseUrl,
      headers,
      fetch: retryingFetch(send, { retries: options.retries ?? 3, maxDelayMs: options.maxRetryDelayMs ?? 10_000 }),
    });
    // One place turns an error answer into a CairnHttpError, for the methods below and for `api` alike.
    this.api.use({
      // The server refuses a POST not declared JSON (a browser could send it cross-site unasked), bodiless ones too.
      onRequest: ({ request }) => {
        if (request.method === 'POST' && !request.headers.has('content-type')) request.headers.set('content-type', 'application/json');
        return undefined;
      },
      onResponse: async ({ request, response }) => {
        if (!response.ok) throw await errorAnswer(request, response);
        return undefined;
      },
    });
  }

  /** Structured memories (`/v1/memories`, `/search/memories`). */
  readonly memories = {
    /** Stores one memory; answers its id and version. */
    create: (memory: NewMemory, options?: CallOptions) => this.call(this.api.POST('/v1/memories', { body: memory, ...options })),
    /** Ranked memories as the formatted text an agent sees (`memory_search`). */
    search: (input: RequestBody<'searchMemories'>, options?: CallOptions) => this.call(this.api.POST('/search/memories', { body: input, ...options })),
    /** Memories, newest first (default 50 a page). */
    list: (query: Query<'listMemories'> = {}, options?: CallOptions) => this.call(this.api.GET('/v1/memories', { params: { query }, ...options })),
    get: (id: string, options?: CallOptions) => this.call(this.api.GET('/v1/memories/{id}', { params: { path: { id } }, ...options })),
    /** Changes the given fields; the version goes up by one. */
    update: (id: string, patch: MemoryPatch, options?: CallOptions) => this.call(this.api.PATCH('/v1/memories/{id}', { params: { path: { id } }, body: patch, ...options })),
    delete: (id: string, options?: CallOptions) => this.call(this.api.DELETE('/v1/memories/{id}', { params: { path: { id } }, ...options })),
  };

  /** Conversation messages (`/capture`, `/v1/conversations`, `/search/conversations`). */
  readonly conversations = {
    /** Records one user/assistant exchange (an empty assistant_content records the user message only). */
    capture: (exchange: RequestBody<'capture'>, options?: CallOptions) => this.call(this.api.POST('/capture', { body: exchange, ...options })),
    /** Records 1-500 messages of a session; a message whose `id` exists already is skipped. */
    add: (input: RequestBody<'addConversation'>, options?: CallOptions) => this.call(this.api.POST('/v1/conversations', { body: input, ...options })),
    /** Ranked messages as the formatted text an agent sees (`conversation_search`). */
    search: (input: RequestBody<'searchConversations'>, options?: CallOptions) => this.call(this.api.POST('/search/conversations', { body: input, ...options })),
    /** Messages, oldest first (default 50 a page). */
    list: (query: Query<'listMessages'> = {}, options?: CallOptions) => this.call(this.api.GET('/v1/conversations', { params: { query }, ...options })),
    deleteSession: (sessionKey: string, options?: CallOptions) =>
      this.call(this.api.DELETE('/v1/conversations/{session_key}', { params: { path: { session_key: sessionKey } }, ...options })),
    deleteMessage: (id: string, options?: CallOptions) => this.call(this.api.DELETE('/v1/messages/{id}', { params: { path: { id } }, ...options })),
  };

  /** Knowledge resources (`/v1/knowledge`): wiki and code folders the server indexes. */
  readonly knowledge = {
    /** Registers a folder; indexing runs in the background (poll `get` until status is ready). */
    add: (resource: RequestBody<'addKnowledge'>, options?: CallOptions) => this.call(this.api.POST('/v1/knowledge', { body: resource, ...options })),
    list: async (options?: CallOptions) => (await this.call(this.api.GET('/v1/knowledge', { ...options }))).resources,
    get: (id: string, options?: CallOptions) => this.call(this.api.GET('/v1/knowledge/{id}', { params: { path: { id } }, ...options })),
    /** Re-syncs incrementally; answers at once (202) while the sync runs. */
    sync: (id: string, options?: CallOptions) => this.call(this.api.POST('/v1/knowledge/{id}/sync', { params: { path: { id } }, ...options })),
    delete: (id: string, options?: CallOptions) => this.call(this.api.DELETE('/v1/knowledge/{id}', { params: { path: { id } }, ...options })),
  };

  /** The auto-recall context for the start of a turn: memories and messages relevant to `query`, ready to inject. */
  recall(input: RequestBody<'recall'>, options?: CallOptions): Promise<RecallAnswer> {
    return this.call(this.api.POST('/recall', { body: input, ...options }));
  }

  /** Discovers tools (`POST /v3/tools/list`): downstream MCP tools and knowledge tools, optionally filtered. */
  listTools(filter: ToolFilter = {}, options?: CallOptions): Promise<Tool[]> {
    return this.call(this.api.POST('/v3/tools/list', { body: filter, ...options }));
  }

  /**
   * Invokes one tool (`POST /v3/tools/call`) by its listed name — or a bare name (`search`) when one source has
   * it — with its arguments; invalid arguments are an `invalid_input` error naming the parameter.
   */
  callTool(name: string, params: Record<string, unknown> = {}, options?: CallOptions & { knowledgeId?: string }): Promise<ToolAnswer> {
    const { knowledgeId, ...call } = options ?? {};
    const body = { tool_name: name, params, ...(knowledgeId === undefined ? {} : { knowledge_id: knowledgeId }) };
    return this.call(this.api.POST('/v3/tools/call', { body, ...call }));
  }

  /** Server, store and embedding status (`GET /health`, no key needed). */
  health(options?: CallOptions): Promise<Health> {
    return this.call(this.api.GET('/health', { ...options }));
  }

  private async call<T>(pending: Promise<{ data?: T }>): Promise<T> {
    // An error answer has already thrown (see the constructor's middleware); a success has its JSON body.
    return (await pending).data as T;
  }
}

async function errorAnswer(request: Request, response: Response): Promise<Error> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (a proxy's error page): toClientError quotes the text.
  }
  return toClientError(request, response, body);
}
