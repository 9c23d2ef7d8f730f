import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Values read at scrape time; each must be cheap (a cached count, a file size). */
export type MetricsProbes = {
  /** Rows waiting for a vector. */
  embedQueueDepth: () => Promise<number>;
  /** Sessions with messages past their extraction cursor, and those messages. */
  pipelineBacklog: () => Promise<{ sessions: number; messages: number }>;
  /** Bytes of the database file and its WAL; null for an in-memory store. */
  storeBytes: () => Promise<number | null>;
};

/** Latency buckets in seconds: sub-millisecond searches up to slow tool calls. */
const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Cairn's Prometheus metrics (prom-client), in a registry of their own so several instances in one
 * process do not collide. Counters and histograms are updated by the surfaces; gauges are read from
 * {@link MetricsProbes} when `/metrics` is scraped (DESIGN.md, "Operations").
 */
export class CairnMetrics {
  readonly registry = new Registry();
  private readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  private readonly httpDuration: Histogram<'method' | 'route'>;
  private readonly toolCalls: Counter<'tool' | 'outcome'>;
  private readonly toolDuration: Histogram<'tool'>;
  private readonly searches: Counter<'kind' | 'strategy'>;

  constructor(probes: MetricsProbes) {
    const registers = [this.registry];
    this.httpRequests = new Counter({
      name: 'cairn_http_requests_total',
      help: 'HTTP requests by method, route pattern and status.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'cairn_http_request_duration_seconds',
      help: 'HTTP request latency by method and route pattern.',
      labelNames: ['method', 'route'],
      buckets: BUCKETS,
      registers,
    });
    this.toolCalls = new Counter({ name: 'cairn_mcp_tool_calls_total', help: 'MCP tool calls by tool and outcome (ok or error).', labelNames: ['tool', 'outcome'], registers });
    this.toolDuration = new Histogram({ name: 'cairn_mcp_tool_duration_seconds', help: 'MCP tool call latency by tool.', labelNames: ['tool'], buckets: BUCKETS, registers });
    this.searches = new Counter({
      name: 'cairn_searches_total',
      help: 'Memory and conversation searches by the strategy that answered (hybrid, fts, embedding, none).',
      labelNames: ['kind', 'strategy'],
      registers,
    });
    new Gauge({
      name: 'cairn_embed_queue_depth',
      help: 'Rows waiting for a vector from the current embedder.',
      registers,
      async collect() {
        this.set(await probes.embedQueueDepth());
      },
    });
    const backlogSessions = new Gauge({ name: 'cairn_pipeline_backlog_sessions', help: 'Sessions with messages not yet extracted into memories.', registers });
    new Gauge({
      name: 'cairn_pipeline_backlog_messages',
      help: 'Messages not yet extracted into memories.',
      registers,
      async collect() {
        const backlog = await probes.pipelineBacklog();
        this.set(backlog.messages);
        backlogSessions.set(backlog.sessions);
      },
    });
    new Gauge({
      name: 'cairn_store_size_bytes',
      help: 'Bytes the store occupies: the SQLite file plus its write-ahead log, or the PostgreSQL tables of its schema with their indexes.',
      registers,
      async collect() {
        const bytes = await probes.storeBytes();
        if (bytes !== null) this.set(bytes);
      },
    });
  }

  /** Counts one HTTP request; `route` is the matched pattern (`/v1/memories/:id`), never the raw path. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.httpRequests.inc({ method, route, status: String(status) });
    this.httpDuration.observe({ method, route }, seconds);
  }

  observeToolCall(tool: string, isError: boolean, seconds: number): void {
    this.toolCalls.inc({ tool, outcome: isError ? 'error' : 'ok' });
    this.toolDuration.observe({ tool }, seconds);
  }

  observeSearch(kind: 'memories' | 'conversations', strategy: string): void {
    this.searches.inc({ kind, strategy });
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}
