import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { int8ScanAvailable } from '../src/search/int8-scan.js';
import { MessageVectorIndex, type VectorSnapshot } from '../src/store/sqlite/message-vector-index.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { decodeVectorSnapshot, encodeVectorSnapshot, readVectorSnapshot } from '../src/store/sqlite/vector-snapshot.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-vectors-'));
  dirs.push(dir);
  return join(dir, 'cairn.db');
}

/** A seeded generator of Gaussian unit vectors (dense, like a model's). */
function gaussianVectors(n: number, dims: number, seed: number): Float32Array[] {
  let state = seed >>> 0;
  const uniform = () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return (state + 0.5) / 2 ** 32;
  };
  return Array.from({ length: n }, () => {
    const v = Float32Array.from({ length: dims }, () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform()));
    const norm = Math.hypot(...v);
    return v.map((x) => x / norm);
  });
}

const scope = { userId: 'u', agentId: 'a' };
const other = { userId: 'u2', agentId: 'a' };
const cosine = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

type Stored = { id: string; seq: number; session: string; vector: Float32Array };

/** The exact top `k` of `stored` for `query` by cosine, as seqs (random vectors have no ties). */
function exactTop(stored: readonly Stored[], query: Float32Array, k: number): number[] {
  return stored
    .map((s) => ({ seq: s.seq, score: cosine(query, s.vector) }))
    .sort((a, b) => b.score - a.score)
    .slice(0, k)
    .map((s) => s.seq);
}

/** Writes messages with `vectors` (embedder `embedderId`) into `store`, in sessions s0..s4; returns them with their seqs. */
async function write(store: SqliteStore, target: typeof scope, vectors: Float32Array[], embedderId: string, from: number): Promise<Stored[]> {
  await store.messages.addMessages(
    vectors.map((_, i) => ({ id: `m${from + i}`, scope: target, sessionKey: `s${(from + i) % 5}`, role: 'user' as const, content: `message ${from + i}` })),
  );
  const byText = new Map(vectors.map((v, i) => [`message ${from + i}`, v]));
  const pending = (await store.embeddings.pendingEmbeddings('message', embedderId, { after: 0, limit: 1_000_000 })).filter((p) => byText.has(p.text));
  await store.embeddings.indexVectors('message', embedderId, vectors[0]!.length);
  await store.embeddings.saveEmbeddings(
    'message',
    embedderId,
    pending.map((p) => ({ key: p.key, text: p.text, vector: byText.get(p.text)! })),
  );
  return pending.map((p) => {
    const n = Number(p.text.slice(8));
    return { id: `m${n}`, seq: p.position, session: `s${n % 5}`, vector: byText.get(p.text)! };
  });
}

/** A fresh store holding `n` Gaussian vectors (embedder `e`) in `scope`, and a read-only connection to its file. */
async function storedVectors(n: number, dims: number, seed: number) {
  const path = tempDb();
  const store = SqliteStore.open({ path });
  const stored = await write(store, scope, gaussianVectors(n, dims, seed), 'e', 0);
  const reader = new Database(path, { readonly: true });
  const close = async (): Promise<void> => {
    reader.close();
    await store.close();
  };
  return { store, stored, reader, close };
}

describe('in-memory message vector index (int8 candidates, exact re-rank)', () => {
  it('runs its WebAssembly SIMD scan on this platform', () => {
    expect(int8ScanAvailable()).toBe(true);
  });

  it.each([
    [384, 1_500],
    [24, 800],
    // Enough rows that the candidate selection samples every second value.
    [16, 9_000],
  ])('returns the exact cosine top k at %i dimensions (%i vectors), with and without a session filter', async (dims, n) => {
    const path = tempDb();
    const store = SqliteStore.open({ path });
    const stored = await write(store, scope, gaussianVectors(n, dims, dims), 'e', 0);
    // Another tenant's vectors in the same file never answer.
    await write(store, other, gaussianVectors(200, dims, 5), 'e', n);
    const reader = new Database(path, { readonly: true });
    const index = MessageVectorIndex.open(reader)!;
    for (const query of gaussianVectors(25, dims, 1000 + dims)) {
      for (const k of [1, 10, 30]) {
        const hits = index.search(scope, 'e', query, undefined, k);
        expect(hits.map((h) => h.seq)).toEqual(exactTop(stored, query, k));
        hits.forEach((h) => expect(1 - h.distance).toBeCloseTo(cosine(query, stored.find((s) => s.seq === h.seq)!.vector), 5));
      }
      const inSession = index.search(scope, 'e', query, 's2', 12);
      expect(inSession.map((h) => h.seq)).toEqual(
        exactTop(
          stored.filter((s) => s.session === 's2'),
          query,
          12,
        ),
      );
    }
    expect(index.search(scope, 'e', gaussianVectors(1, dims, 1)[0]!, 'no such session', 5)).toEqual([]);
    // Through the store (its own in-memory index), ids in the same order.
    const query = gaussianVectors(1, dims, 77)[0]!;
    const exact = exactTop(stored, query, 15).map((seq) => stored.find((s) => s.seq === seq)!.id);
    expect((await store.messages.searchMessagesByVector(scope, query, 'e', {}, 15)).map((h) => h.id)).toEqual(exact);
    reader.close();
    await store.close();
  });

  it('with a similarity floor returns every hit that reaches it, in order, and reads fewer vectors', async () => {
    const dims = 64;
    const { stored, reader, close } = await storedVectors(1_500, dims, 31);
    const floored = MessageVectorIndex.open(reader)!;
    const full = MessageVectorIndex.open(reader)!;
    // Random 64-dimensional unit vectors have cosine about ±0.125: a floor of 0.3 keeps a few per query.
    const floor = 0.3;
    let kept = 0;
    for (const query of gaussianVectors(30, dims, 32)) {
      const hits = floored.search(scope, 'e', query, undefined, 30, floor);
      const reaching = exactTop(stored, query, 30).filter((seq) => cosine(query, stored.find((s) => s.seq === seq)!.vector) >= floor);
      expect(hits.filter((h) => 1 - h.distance >= floor).map((h) => h.seq)).toEqual(reaching);
      kept += reaching.length;
      expect(full.search(scope, 'e', query, undefined, 30).map((h) => h.seq)).toEqual(exactTop(stored, query, 30));
    }
    expect(kept).toBeGreaterThan(0);
    expect(floored.counts.reranked).toBeLessThan(full.counts.reranked / 2);
    await close();
  });

  it('reports the bytes it holds per scope and drops a scope on release, answering the same after reloading it', async () => {
    const dims = 48;
    const { stored, reader, close } = await storedVectors(700, dims, 41);
    const index = MessageVectorIndex.open(reader)!;
    expect(index.heldBytes(scope)).toBe(0);
    const query = gaussianVectors(1, dims, 42)[0]!;
    const before = index.search(scope, 'e', query, undefined, 10);
    // 48 int8 values in a 48-byte row, its scale, seq and session (no sign codes on a scope this small).
    expect(index.heldBytes(scope)).toBe(stored.length * (48 + 8 + 8 + 4));
    expect(index.heldBytes(other)).toBe(0);
    index.release(scope);
    expect(index.heldBytes(scope)).toBe(0);
    expect(index.search(scope, 'e', query, undefined, 10)).toEqual(before);
    expect(index.heldBytes(scope)).toBeGreaterThan(0);
    await close();
  });

  it('on a large scope scans only the sign-bit candidates: exact similarities, nearest first, most of the exact top k', async () => {
    const dims = 384;
    const { store, stored, reader, close } = await storedVectors(3_000, dims, 21);
    // The stage forced on from the first row; 10 candidates per neighbour keep 100 of 3,000 rows for k = 10.
    const approximate = MessageVectorIndex.open(reader, { approximateFrom: 0, candidatesPerNeighbour: 10 })!;
    let found = 0;
    const queries = gaussianVectors(20, dims, 22);
    for (const query of queries) {
      const hits = approximate.search(scope, 'e', query, undefined, 10);
      expect(hits).toHaveLength(10);
      const similarities = hits.map((h) => 1 - h.distance);
      hits.forEach((h, i) => expect(similarities[i]).toBeCloseTo(cosine(query, stored.find((s) => s.seq === h.seq)!.vector), 5));
      expect([...similarities].sort((a, b) => b - a)).toEqual(similarities);
      const exact = new Set(exactTop(stored, query, 10));
      found += hits.filter((h) => exact.has(h.seq)).length;
      // A stored vector is its own nearest: its code differs from the query's in no bit.
      expect(approximate.search(scope, 'e', stored[found % stored.length]!.vector, undefined, 1)[0]!.seq).toBe(stored[found % stored.length]!.seq);
    }
    expect(approximate.counts.approximate).toBe(2 * queries.length);
    // Random 384-dimensional vectors are nearly orthogonal, the hardest case for 512 bits; still most are found.
    expect(found / (10 * queries.length)).toBeGreaterThan(0.5);
    // A session filter and a scope under the default size are searched exactly.
    const defaults = MessageVectorIndex.open(reader)!;
    for (const query of queries.slice(0, 5)) {
      expect(defaults.search(scope, 'e', query, undefined, 10).map((h) => h.seq)).toEqual(exactTop(stored, query, 10));
      expect(approximate.search(scope, 'e', query, 's1', 10).map((h) => h.seq)).toEqual(
        exactTop(
          stored.filter((s) => s.session === 's1'),
          query,
          10,
        ),
      );
    }
    expect(defaults.counts.approximate).toBe(0);
    // Rows added later get codes: at once (around the same mean), and all again once the scope has doubled.
    for (const [added, from] of [
      [500, 3_000],
      [3_000, 3_500],
    ] as const) {
      const more = await write(store, scope, gaussianVectors(added, dims, from), 'e', from);
      for (const row of [more[0]!, more.at(-1)!]) expect(approximate.search(scope, 'e', row.vector, undefined, 1)[0]!.seq).toBe(row.seq);
    }
    await close();
  });

  it('follows inserts, deletions, cleared vectors and an embedder change made by another connection', async () => {
    const path = tempDb();
    const dims = 64;
    const store = SqliteStore.open({ path });
    let stored = await write(store, scope, gaussianVectors(400, dims, 11), 'e', 0);
    const reader = new Database(path, { readonly: true });
    const index = MessageVectorIndex.open(reader)!;
    const queries = gaussianVectors(8, dims, 12);
    const check = (embedderId: string, expected: readonly Stored[]) => {
      for (const query of queries) {
        expect(index.search(scope, embedderId, query, undefined, 20).map((h) => h.seq)).toEqual(exactTop(expected, query, 20));
        expect(index.search(scope, embedderId, query, 's1', 5).map((h) => h.seq)).toEqual(
          exactTop(
            expected.filter((s) => s.session === 's1'),
            query,
            5,
          ),
        );
      }
    };
    check('e', stored);

    // New messages and vectors: topped up.
    stored = stored.concat(await write(store, scope, gaussianVectors(150, dims, 13), 'e', 400));
    check('e', stored);

    // The nearest message of each query is deleted (and a whole session): the scope reloads.
    const nearest = new Set(queries.map((q) => exactTop(stored, q, 1)[0]!));
    for (const s of stored.filter((s) => nearest.has(s.seq))) expect(await store.messages.deleteMessage(scope, s.id)).toBe(true);
    expect(await store.messages.deleteSession(scope, 's3')).toBeGreaterThan(0);
    stored = stored.filter((s) => !nearest.has(s.seq) && s.session !== 's3');
    check('e', stored);

    // A vector saved as "no vector" (null) leaves the index.
    const cleared = stored.slice(0, 30);
    await store.embeddings.saveEmbeddings(
      'message',
      'e',
      cleared.map((s) => ({ key: String(s.seq), text: `message ${s.id.slice(1)}`, vector: null })),
    );
    stored = stored.slice(30);
    check('e', stored);

    // Another embedder's vectors replace these: the old embedder has none left, the new one has them all.
    const replaced = gaussianVectors(stored.length, dims, 14);
    await store.embeddings.saveEmbeddings(
      'message',
      'f',
      stored.map((s, i) => ({ key: String(s.seq), text: `message ${s.id.slice(1)}`, vector: replaced[i]! })),
    );
    expect(index.search(scope, 'e', queries[0]!, undefined, 5)).toEqual([]);
    check(
      'f',
      stored.map((s, i) => ({ ...s, vector: replaced[i]! })),
    );
    reader.close();
    await store.close();
  });
});

describe('vector snapshots', () => {
  const dims = 48;
  // The sign-bit stage from the first row (so codes, and with them a snapshot, are made), keeping every
  // row as a candidate (64 × 10 ≥ the rows here): the answers are exact, so any wrong row shows.
  const options = { approximateFrom: 0, candidatesPerNeighbour: 64 };
  const queries = gaussianVectors(12, dims, 42);

  /** A fresh read-only connection's index, and the snapshots it hands over. */
  function openIndex(path: string) {
    const reader = new Database(path, { readonly: true });
    const made: VectorSnapshot[] = [];
    const index = MessageVectorIndex.open(reader, { ...options, onSnapshot: (s) => made.push(s) })!;
    return { index, made, reader };
  }

  const seqsOf = (index: MessageVectorIndex, query: Float32Array, session?: string) => index.search(scope, 'e', query, session, 10).map((h) => h.seq);

  it('round-trip the rows, codes and sessions through bytes, and reject bytes they did not write', () => {
    const image = {
      dimensions: 3,
      width: 16,
      codeWidth: 64,
      size: 2,
      slack: 0.01,
      codedSize: 2,
      seqs: Float64Array.of(4, 9),
      scales: Float64Array.of(0.5, 0.25),
      center: Float64Array.of(0.1, 0.2, 0.3),
      sessions: Int32Array.of(1, 0),
      sessionKeys: ['a', 'b'],
      rows: Int8Array.from({ length: 32 }, (_, i) => i - 16),
      codes: Uint8Array.from({ length: 128 }, (_, i) => i),
    };
    const bytes = new Uint8Array(encodeVectorSnapshot(image));
    expect(decodeVectorSnapshot(bytes)).toEqual(image);
    // Read from a view at an odd offset, and from a Node Buffer (as a row of the database hands it; small
    // ones share a pool, and a Buffer's own slice shares its memory).
    const shifted = new Uint8Array(bytes.length + 1);
    shifted.set(bytes, 1);
    expect(decodeVectorSnapshot(shifted.subarray(1))).toEqual(image);
    expect(decodeVectorSnapshot(Buffer.from(bytes))).toEqual(image);
    expect(() => decodeVectorSnapshot(bytes.subarray(0, bytes.length - 8))).toThrow(/length/);
    expect(() => decodeVectorSnapshot(Uint8Array.of(0, 0))).toThrow(/short/);
    const badSession = { ...image, sessions: Int32Array.of(0, 5) };
    expect(() => decodeVectorSnapshot(new Uint8Array(encodeVectorSnapshot(badSession)))).toThrow(/session/);
    // In pieces of any size (the header split too), copied straight into the arrays given for the rows, scales and codes.
    for (const size of [1, 5, 8, 64, 333]) {
      const pieces: Uint8Array[] = [];
      for (let at = 0; at < bytes.length; at += size) pieces.push(bytes.subarray(at, at + size));
      const rows = new Int8Array(32);
      const scales = new Float64Array(2);
      const codes = new Uint8Array(128);
      const read = readVectorSnapshot(pieces, (layout) => {
        expect(layout.bytes).toBe(bytes.length);
        return { rows: new Uint8Array(rows.buffer), scales: new Uint8Array(scales.buffer), codes };
      });
      expect(read).toEqual(image);
      expect([rows, scales, codes]).toEqual([image.rows, image.scales, image.codes]);
      expect(() => readVectorSnapshot(pieces.slice(0, -1), () => ({ rows: new Uint8Array(32), scales: new Uint8Array(16), codes: new Uint8Array(128) }))).toThrow(/length/);
      expect(() => readVectorSnapshot([...pieces, Uint8Array.of(1)], () => ({ rows: new Uint8Array(32), scales: new Uint8Array(16), codes: new Uint8Array(128) }))).toThrow(
        /length/,
      );
    }
    // Room of the wrong size for a section is refused.
    expect(() => readVectorSnapshot([bytes], () => ({ rows: new Uint8Array(31), scales: new Uint8Array(16), codes: new Uint8Array(128) }))).toThrow(/room/);
  });

  it('are made with the sign codes, saved by the writer, and answer a new connection the same; later vectors are added to them', async () => {
    const { store, stored, close } = await storedVectors(600, dims, 41);
    const path = store.capabilities.location;
    const first = openIndex(path);
    const answers = queries.map((q) => seqsOf(first.index, q));
    answers.forEach((seqs, i) => expect(seqs).toEqual(exactTop(stored, queries[i]!, 10)));
    expect(first.made).toHaveLength(1);
    expect(first.index.counts.snapshots).toBe(0);
    await store.messages.saveVectorSnapshot(first.made[0]!);

    const second = openIndex(path);
    expect(queries.map((q) => seqsOf(second.index, q))).toEqual(answers);
    expect(queries.map((q) => seqsOf(second.index, q, 's2'))).toEqual(
      queries.map((q) =>
        exactTop(
          stored.filter((s) => s.session === 's2'),
          q,
          10,
        ),
      ),
    );
    expect(second.index.counts.snapshots).toBe(1);
    // Its codes came with the snapshot: none made again, so nothing handed over.
    expect(second.made).toHaveLength(0);

    // Vectors saved after the snapshot are read on top of it.
    const all = stored.concat(await write(store, scope, gaussianVectors(100, dims, 43), 'e', 600));
    const third = openIndex(path);
    for (const q of queries) expect(seqsOf(third.index, q)).toEqual(exactTop(all, q, 10));
    expect(third.index.counts.snapshots).toBe(1);
    for (const c of [first, second, third]) c.reader.close();
    await close();
  });

  it('are dropped by a deletion in the scope and never saved from before it; an unreadable one is ignored', async () => {
    const { store, stored, close } = await storedVectors(600, dims, 51);
    const path = store.capabilities.location;
    const raw = new Database(path);
    const count = raw.prepare('SELECT count(*) FROM message_vector_snapshots').pluck();
    const first = openIndex(path);
    for (const q of queries) seqsOf(first.index, q);
    const before = first.made[0]!;
    await store.messages.saveVectorSnapshot(before);
    expect(count.get()).toBe(1);

    // Deleting each query's nearest message drops the snapshot; the one made before cannot come back.
    const nearest = new Set(queries.map((q) => exactTop(stored, q, 1)[0]!));
    for (const s of stored.filter((s) => nearest.has(s.seq))) await store.messages.deleteMessage(scope, s.id);
    expect(count.get()).toBe(0);
    await store.messages.saveVectorSnapshot(before);
    expect(count.get()).toBe(0);
    const left = stored.filter((s) => !nearest.has(s.seq));
    const second = openIndex(path);
    for (const q of queries) expect(seqsOf(second.index, q)).toEqual(exactTop(left, q, 10));
    expect(second.index.counts.snapshots).toBe(0);

    // A snapshot of the new generation is saved; damaged bytes are read as no snapshot.
    await store.messages.saveVectorSnapshot(second.made[0]!);
    expect(count.get()).toBe(1);
    raw.prepare(`UPDATE message_vector_snapshots SET data = X'0400000000ff00ff'`).run();
    const third = openIndex(path);
    for (const q of queries) expect(seqsOf(third.index, q)).toEqual(exactTop(left, q, 10));
    expect(third.index.counts.snapshots).toBe(0);
    // So are well-formed bytes whose sign codes come without the center they were made around.
    const centerless = encodeVectorSnapshot({ ...decodeVectorSnapshot(new Uint8Array(second.made[0]!.data)), center: null });
    raw.prepare('UPDATE message_vector_snapshots SET data = ?').run(Buffer.from(centerless));
    const fourth = openIndex(path);
    for (const q of queries) expect(seqsOf(fourth.index, q)).toEqual(exactTop(left, q, 10));
    expect(fourth.index.counts.snapshots).toBe(0);
    for (const c of [first, second, third, fourth]) c.reader.close();
    raw.close();
    await close();
  });
});

describe('vector snapshots in parts', () => {
  it('of a scope larger than one part are read only as a whole set of one snapshot', async () => {
    const dims = 384;
    // About 470 bytes a row: 20,000 rows make a snapshot of a little over one part (8 MiB).
    const { store, close } = await storedVectors(20_000, dims, 61);
    const path = store.capabilities.location;
    const queries = gaussianVectors(8, dims, 62);
    const made: VectorSnapshot[] = [];
    const reader = new Database(path, { readonly: true });
    const options = { approximateFrom: 0 };
    const first = MessageVectorIndex.open(reader, { ...options, onSnapshot: (s) => made.push(s) })!;
    const answers = queries.map((q) => first.search(scope, 'e', q, undefined, 10).map((h) => h.seq));
    expect(made).toHaveLength(1);
    await store.messages.saveVectorSnapshot(made[0]!);
    const raw = new Database(path);
    const parts = raw.prepare('SELECT part, parts, length(data) AS bytes FROM message_vector_snapshots ORDER BY part').all() as { part: number; parts: number; bytes: number }[];
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.map((p) => p.part)).toEqual(parts.map((_, i) => i));
    expect(parts.every((p) => p.parts === parts.length)).toBe(true);
    expect(parts.reduce((sum, p) => sum + p.bytes, 0)).toBe(made[0]!.data.byteLength);

    /** A new connection's answers, and whether it read the snapshot. */
    const fresh = () => {
      const index = MessageVectorIndex.open(reader, options)!;
      const seqs = queries.map((q) => index.search(scope, 'e', q, undefined, 10).map((h) => h.seq));
      return { seqs, fromSnapshot: index.counts.snapshots === 1 };
    };
    // The same codes and rows as the connection that made them: the same answers, sign-bit stage included.
    expect(fresh()).toEqual({ seqs: answers, fromSnapshot: true });
    // A part of another snapshot (an interrupted or interleaved write), or a missing part: not used.
    raw.prepare('UPDATE message_vector_snapshots SET saves = saves - 1 WHERE part = 1').run();
    expect(fresh()).toEqual({ seqs: answers, fromSnapshot: false });
    raw.prepare('UPDATE message_vector_snapshots SET saves = saves + 1 WHERE part = 1').run();
    expect(fresh().fromSnapshot).toBe(true);
    // A part count no buffer can hold (damaged rows): not used either.
    raw.prepare('UPDATE message_vector_snapshots SET parts = 1e12').run();
    expect(fresh()).toEqual({ seqs: answers, fromSnapshot: false });
    raw.prepare(`UPDATE message_vector_snapshots SET parts = ${parts.length}`).run();
    raw.prepare('DELETE FROM message_vector_snapshots WHERE part = 1').run();
    expect(fresh()).toEqual({ seqs: answers, fromSnapshot: false });
    raw.close();
    reader.close();
    await close();
  });
});
