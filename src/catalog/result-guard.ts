import type { FetchLike, Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import { deserializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { ErrorCode, type JSONRPCMessage, type MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import { isRecord } from './schema.js';

/**
 * Bounds on what a downstream server may send (DESIGN.md, "Tool hub"): a message nested deeper than
 * `maxDepth` or larger than `maxBytes` becomes an error answer to the request it answers, so only that
 * call fails; the connection and every other call on it carry on.
 */
export type ResultLimits = { maxDepth: number; maxBytes: number };

/** An answer refused for its size while it streamed in: a failure of that one call, not of the connection. */
export class ResultLimitError extends Error {
  override readonly name = 'ResultLimitError';
}

/** The JSON-RPC code of a too-deep or too-large answer (an internal error of that one request). */
const LIMIT_ERROR_CODE = ErrorCode.InternalError;
/** Bytes of an oversized line kept at each end, to find the id of the request it answers. */
const ID_PROBE_BYTES = 256;

/**
 * Why `value` breaks the limits, or null. Walks iteratively (an explicit stack, never recursion), so a
 * value nested 100,000 levels deep is measured without touching the call stack, and stops at the first
 * breach. The size is the UTF-16 length of strings plus a few bytes per value: a close lower bound of the
 * JSON text, which is all a bound needs.
 */
export function resultLimitBreach(value: unknown, limits: ResultLimits, what = 'the result'): string | null {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  let bytes = 0;
  while (stack.length > 0) {
    const { value: v, depth } = stack.pop()!;
    if (typeof v === 'string') bytes += v.length + 2;
    else if (typeof v !== 'object' || v === null) bytes += 4;
    else {
      if (depth >= limits.maxDepth) return depthMessage(limits, what);
      bytes += 2;
      if (Array.isArray(v)) {
        for (const item of v) stack.push({ value: item, depth: depth + 1 });
      } else {
        for (const [key, item] of Object.entries(v)) {
          bytes += key.length + 3;
          stack.push({ value: item, depth: depth + 1 });
        }
      }
    }
    if (bytes > limits.maxBytes) return sizeMessage(limits, what);
  }
  return null;
}

function depthMessage(limits: ResultLimits, what: string): string {
  return `${what} is nested more than ${limits.maxDepth} levels deep (limit tools.max_result_depth); Cairn refused it`;
}

function sizeMessage(limits: ResultLimits, what = 'the result'): string {
  return `${what} is larger than ${formatBytes(limits.maxBytes)} (limit tools.max_result_bytes); Cairn refused it`;
}

function formatBytes(n: number): string {
  return n >= 1024 * 1024 && n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n} bytes`;
}

/**
 * Wraps a client transport so every message from the server is measured before the SDK sees it: an
 * answer over the limits is replaced by an error answer with the same id; any other message over them
 * is dropped and reported through `onerror` (which does not close the connection).
 */
export class GuardedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;

  constructor(
    private readonly inner: Transport,
    private readonly limits: ResultLimits,
  ) {
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
    inner.onmessage = (message, extra) => this.deliver(message, extra);
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  private deliver(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    const breach = resultLimitBreach(message, this.limits);
    if (breach === null) {
      this.onmessage?.(message, extra);
      return;
    }
    const id = isRecord(message) && !('method' in message) ? message.id : undefined;
    if (typeof id === 'number' || typeof id === 'string') this.onmessage?.(limitError(id, breach), extra);
    else this.onerror?.(new Error(`dropped a message from the server: ${breach}`));
  }
}

function limitError(id: string | number, message: string): JSONRPCMessage {
  return { jsonrpc: '2.0', id, error: { code: LIMIT_ERROR_CODE, message } };
}

/**
 * The stdio transport's line reader, bounded per line instead of per buffer: a line longer than
 * `maxBytes` is skipped as it streams in (never held whole) and read as an error answer to the request
 * it answers, found by its `"id"`. The SDK's own reader instead drops the whole connection when its
 * buffer passes 10 MiB. Same interface as the SDK's `ReadBuffer` (append, readMessage, clear).
 */
export class BoundedLineBuffer {
  private chunks: Buffer[] = [];
  private pendingBytes = 0;
  /** Set while an oversized line streams past: its length so far and its first and last bytes. */
  private skipping: { bytes: number; head: Buffer; tail: Buffer } | null = null;
  private readonly ready: (string | { oversized: string })[] = [];

  constructor(private readonly limits: ResultLimits) {}

  append(chunk: Buffer): void {
    splitLines(
      chunk,
      (part) => this.take(part),
      () => this.endLine(),
    );
  }

  readMessage(): JSONRPCMessage | null {
    const next = this.ready.shift();
    if (next === undefined) return null;
    if (typeof next === 'string') return deserializeMessage(next);
    const id = probeId(next.oversized);
    if (id === null) throw new Error(`dropped a line from the server: ${sizeMessage(this.limits)}`);
    return limitError(id, sizeMessage(this.limits));
  }

  clear(): void {
    this.chunks = [];
    this.pendingBytes = 0;
    this.skipping = null;
    this.ready.length = 0;
  }

  private take(part: Buffer): void {
    if (part.length === 0) return;
    if (this.skipping) {
      this.skipping.bytes += part.length;
      this.skipping.tail = lastBytes(Buffer.concat([this.skipping.tail, part]));
      return;
    }
    this.chunks.push(part);
    this.pendingBytes += part.length;
    if (this.pendingBytes > this.limits.maxBytes) {
      const line = Buffer.concat(this.chunks);
      this.skipping = { bytes: line.length, head: line.subarray(0, ID_PROBE_BYTES), tail: lastBytes(line) };
      this.chunks = [];
      this.pendingBytes = 0;
    }
  }

  private endLine(): void {
    if (this.skipping) {
      this.ready.push({ oversized: `${this.skipping.head.toString('utf8')}\n${this.skipping.tail.toString('utf8')}` });
      this.skipping = null;
      return;
    }
    const line = Buffer.concat(this.chunks).toString('utf8').replace(/\r$/, '');
    this.chunks = [];
    this.pendingBytes = 0;
    if (line.trim() !== '') this.ready.push(line);
  }
}

/**
 * Feeds one chunk of a newline-delimited stream to a line reader: each piece of a line to `part` (a line
 * may span chunks), then `end` at each newline. The reader keeps the pieces, so it can bound a line as
 * it streams in instead of holding it whole.
 */
export function splitLines(chunk: Buffer, part: (piece: Buffer) => void, end: () => void): void {
  let start = 0;
  for (let nl = chunk.indexOf(0x0a, start); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
    part(chunk.subarray(start, nl));
    end();
    start = nl + 1;
  }
  if (start < chunk.length) part(chunk.subarray(start));
}

function lastBytes(b: Buffer): Buffer {
  return b.length > ID_PROBE_BYTES ? Buffer.from(b.subarray(b.length - ID_PROBE_BYTES)) : b;
}

/** The id of an answer from the ends of its line: `"id":N` closes the SDK's answers, or opens them. */
function probeId(ends: string): number | string | null {
  const [head = '', tail = ''] = ends.split('\n');
  const match = /"id"\s*:\s*(\d+|"[^"\\]{1,64}")\s*\}\s*$/.exec(tail) ?? /^\s*\{(?:\s*"jsonrpc"\s*:\s*"2\.0"\s*,)?\s*"id"\s*:\s*(\d+|"[^"\\]{1,64}")/.exec(head);
  if (!match) return null;
  const raw = match[1]!;
  return raw.startsWith('"') ? raw.slice(1, -1) : Number(raw);
}

/**
 * `fetch` for the streamable HTTP transport with a bounded JSON answer: the body of an
 * `application/json` response fails once it passes `maxBytes`, so the request it answers fails with the
 * limit's name instead of being read whole. Event streams carry many messages; {@link GuardedTransport}
 * measures each of those.
 */
export function boundedFetch(limits: ResultLimits, base: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const res = await base(url, init);
    if (!res.body || !(res.headers.get('content-type') ?? '').includes('application/json')) return res;
    let seen = 0;
    const body = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > limits.maxBytes) controller.error(new ResultLimitError(sizeMessage(limits)));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
