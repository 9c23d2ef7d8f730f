import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { splitLines } from '../catalog/result-guard.js';

/** JSON-RPC 2.0 error codes for messages that never reach a handler. */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;

/** An error reply to a message that could not be taken (`id` null when the message had none to echo). */
export type JsonRpcErrorReply = { jsonrpc: '2.0'; id: string | number | null; error: { code: number; message: string } };

/** Longest line accepted, in bytes (the SDK's own stdio limit). */
const MAX_LINE_BYTES = 10 * 1024 * 1024;

/**
 * Splits a newline-delimited JSON-RPC stream (MCP stdio) into lines, passing valid messages on and
 * answering the others as JSON-RPC requires: unparseable JSON with a parse error (-32700, id null), and
 * JSON that is not a JSON-RPC message (a batch, a bare value, a request without `method`) with an invalid
 * request error (-32600, its id when it had a usable one). A line over 10 MiB is dropped with -32600.
 * Either way the stream goes on.
 */
export class JsonRpcLines {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private overflowing = false;

  constructor(
    private readonly onMessage: (line: string) => void,
    private readonly onReject: (reply: JsonRpcErrorReply) => void,
  ) {}

  push(chunk: Buffer): void {
    splitLines(
      chunk,
      (part) => this.append(part),
      () => this.finishLine(),
    );
  }

  private append(part: Buffer): void {
    if (this.overflowing) return;
    if (this.pendingBytes + part.length > MAX_LINE_BYTES) {
      this.overflowing = true;
      this.pending = [];
      this.pendingBytes = 0;
      return;
    }
    this.pending.push(part);
    this.pendingBytes += part.length;
  }

  private finishLine(): void {
    const overflowed = this.overflowing;
    const line = Buffer.concat(this.pending).toString('utf8').replace(/\r$/, '');
    this.pending = [];
    this.pendingBytes = 0;
    this.overflowing = false;
    if (overflowed) return this.reject(null, INVALID_REQUEST, `Invalid Request: message exceeds ${MAX_LINE_BYTES} bytes`);
    if (line.trim() === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch (err) {
      return this.reject(null, PARSE_ERROR, `Parse error: ${err instanceof Error ? err.message : String(err)}`);
    }
    const valid = JSONRPCMessageSchema.safeParse(parsed);
    if (!valid.success) {
      const issue = valid.error.issues[0];
      const detail = Array.isArray(parsed) ? 'batches are not supported' : issue?.message ? `not a JSON-RPC 2.0 message (${issue.message})` : 'not a JSON-RPC 2.0 message';
      return this.reject(idOf(parsed), INVALID_REQUEST, `Invalid Request: ${detail}`);
    }
    this.onMessage(line);
  }

  private reject(id: string | number | null, code: number, message: string): void {
    this.onReject({ jsonrpc: '2.0', id, error: { code, message } });
  }
}

function idOf(value: unknown): string | number | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const id = (value as { id?: unknown }).id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}
