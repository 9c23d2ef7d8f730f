import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { CairnError } from '../errors.js';
import { scopeSchema } from '../memory/schemas.js';
import { parseInput } from '../parse-input.js';
import type { ApiKey, KeyStore } from '../store/store.js';

/** A newly created API key; `token` is shown once and never stored. */
export type CreatedApiKey = { key: ApiKey; token: string };

/** `cairn_<16 hex id>_<43 base64url secret>` */
const API_TOKEN = /^cairn_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

/**
 * API keys over the key store: makes a key's token, keeps only a SHA-256 hash of its secret, and checks
 * a presented token in constant time. What `cairn.keys` is (the CLI's `cairn keys`, the HTTP edge's auth).
 */
export class ApiKeys {
  constructor(private readonly store: KeyStore) {}

  /** Creates a key bound to a user (and optionally one agent); the returned token is the only copy. */
  async create(input: { userId: string; agentId?: string | undefined; label?: string | undefined }): Promise<CreatedApiKey> {
    const userId = parseInput(scopeSchema.shape.userId, input.userId, 'key user');
    const agentId = input.agentId === undefined ? null : parseInput(scopeSchema.shape.agentId, input.agentId, 'key agent');
    const id = randomBytes(8).toString('hex');
    const secret = randomBytes(32).toString('base64url');
    const key = await this.store.createApiKey({ id, userId, agentId, label: input.label ?? '', secretHash: sha256Hex(secret) });
    return { key, token: `cairn_${id}_${secret}` };
  }

  /** Every key, revoked ones included, oldest first (never a secret). */
  async list(): Promise<ApiKey[]> {
    return this.store.listApiKeys();
  }

  /** Revokes a key at once; `not_found` when no active key has this id. */
  async revoke(id: string): Promise<void> {
    if (!(await this.store.revokeApiKey(id))) throw new CairnError('not_found', `API key ${id} not found or already revoked`);
  }

  /** The active key a bearer token belongs to, or an `unauthorized` error. The secret is compared in constant time. */
  async authenticate(token: string): Promise<ApiKey> {
    const match = API_TOKEN.exec(token);
    const stored = match ? await this.store.findApiKey(match[1]!) : null;
    const presented = Buffer.from(sha256Hex(match?.[2] ?? token), 'hex');
    // Compare even when no key matched, so a miss costs the same as a wrong secret.
    const expected = Buffer.from(stored?.secretHash ?? sha256Hex(''), 'hex');
    if (!timingSafeEqual(presented, expected) || !stored) throw new CairnError('unauthorized', 'invalid or revoked API key');
    const { secretHash: _secretHash, ...key } = stored;
    return key;
  }
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
