import type Database from 'better-sqlite3';
import { Int8Rows, int8ScanAvailable } from '../../search/int8-scan.js';
import { BitRows, SignProjection } from '../../search/sign-bits.js';
import { cosine, norm } from '../../search/vector-math.js';
import type { Scope } from '../../types.js';
import type { KnnHit } from './message-knn.js';
import { encodeVectorSnapshot, readVectorSnapshot } from './vector-snapshot.js';

/** Rows the first selection takes in int8 order, per requested neighbour (more are selected when needed). */
const OVERSAMPLE = 4;
/**
 * Allowance for floating-point rounding in the int8 similarities, on top of the quantisation bound: the
 * dot products are exact integers, and their scaling by the two norms' inverses errs by about 1e-16.
 */
const ROUNDING_SLACK = 1e-9;
/**
 * Values {@link bestOf} samples to set its threshold: sorting them is most of its cost, and 512 set it as
 * well for the candidate counts used here (4,096 took about 0.07 ms more per search on 1,920 candidates).
 */
const BEST_OF_SAMPLE = 512;
/**
 * On a large scope, the rows whose sign-bit codes differ least from the query's are the only ones scanned
 * in int8: this many per requested neighbour (bench/hybrid.mjs reports the recall against exact search).
 */
export const CANDIDATES_PER_NEIGHBOUR = 64;
/**
 * The sign-bit stage runs only where an exact scan is costly and the stage cuts it down: on scopes whose
 * int8 rows take at least this many bytes (about 0.4 ms of scan here; 21,800 rows at 384 dimensions) and
 * hold at least 16 times the candidates. Smaller scopes, such as most tenants, are searched exactly.
 */
const EXACT_SCAN_BYTES = 8 * 2 ** 20;
const APPROXIMATE_FROM_CANDIDATES = 16;

/** One scope's vectors of one embedder, as int8 rows (see {@link MessageVectorIndex}). */
type ScopeVectors = {
  embedder: string;
  dimensions: number;
  /** The scope's `message_terms_state.generation` (bumped by every deletion) the rows reflect. */
  generation: number;
  /** The `message_vector_saves` counter the rows reflect: later saves have a higher `saved`. */
  saves: number;
  checkedAt: string;
  size: number;
  /** Row i's int8 code and 1 / ‖code‖ (its scale), in WebAssembly memory for the SIMD scan. */
  codes: Int8Rows;
  /**
   * Row i's sign-bit code (`sign-bits.ts`) for the first stage on large scopes, made from its int8 code
   * minus `center`, the mean of the rows' unit vectors. Made by the first search that uses them, and made
   * again (with a new mean) once the scope has doubled since; until then `center` is null, the codes hold
   * no room and rows added get no code.
   */
  bits: BitRows;
  projection: SignProjection;
  center: Float64Array | null;
  codedSize: number;
  seqs: Float64Array;
  sessions: Int32Array;
  sessionIds: Map<string, number>;
  rowOf: Map<number, number>;
  /** An upper bound of ‖v/‖v‖ − c/‖c‖‖ over the rows (v a stored vector, c its int8 code). */
  slack: number;
};

type Quantised = { code: Int8Array; slack: number; inverse: number } | null;

/** A scope's rows as snapshot bytes (`vector-snapshot.ts`), with what they reflect, for `message_vector_snapshots`. */
export type VectorSnapshot = { scope: Scope; embedder: string; generation: number; saves: number; data: ArrayBuffer };

/** The options that tune the search (what a store or read worker passes on; `onSnapshot` is its own). */
export type VectorIndexTuning = Omit<MessageVectorIndexOptions, 'onSnapshot'>;

export type MessageVectorIndexOptions = {
  /**
   * Receives a snapshot of a scope's rows each time this index makes the scope's sign-bit codes (its
   * first search with the stage, and again once the scope has doubled), to be saved for the next process
   * (the connection that writes does; a read worker sends it there). Default: none is made.
   */
  onSnapshot?: (snapshot: VectorSnapshot) => void;
  /** Rows the sign-bit stage keeps per requested neighbour (default {@link CANDIDATES_PER_NEIGHBOUR}). */
  candidatesPerNeighbour?: number;
  /** Scope size from which the sign-bit stage picks the rows to scan (default: see {@link EXACT_SCAN_BYTES}). */
  approximateFrom?: number;
};

/**
 * Message vector search for one connection: per scope, an int8 copy of the scope's vectors in memory,
 * scanned with WebAssembly SIMD (`int8-scan.ts`), whose candidates are re-ranked by exact cosine over the float32
 * vectors read from `message_vectors` (DESIGN.md, "Vector search"). Candidates are read in decreasing
 * int8 similarity until the quantisation bound proves that no vector left unread can beat the k-th exact
 * similarity, so the answer is the exact top k (ties aside). On a large scope only the rows whose
 * sign-bit codes (`sign-bits.ts`) differ least from the query's are scanned, and the answer is the exact
 * top k among them (the bench reports its recall against the exact top k).
 *
 * Kept current like the keyword engine's postings: loaded on the scope's first search; before each later
 * search (when the database changed) vectors saved since (a higher `message_vectors.saved`) are added or
 * replace their message's row, and a deletion in the scope (a new `message_terms_state.generation`) or
 * another embedder reloads it. `message_vectors` stays the record; nothing here is ever written.
 */
export class MessageVectorIndex {
  /**
   * Searches answered, those that scanned only the sign-bit candidates, exact similarities computed
   * for them (re-ranked candidates), and scopes loaded from a snapshot, since the index opened.
   */
  readonly counts = { searches: 0, approximate: 0, reranked: 0, snapshots: 0 };
  private readonly scopes = new Map<string, ScopeVectors>();
  private readonly version: Database.Statement;
  private readonly state: Database.Statement;
  private readonly rowsOf: Database.Statement;
  private readonly savedAfter: Database.Statement;
  private readonly floats: Database.Statement;
  private readonly readSnapshot: Database.Statement;

  private constructor(
    private readonly db: Database.Database,
    private readonly options: MessageVectorIndexOptions,
  ) {
    this.version = db.prepare('SELECT data_version AS version, total_changes() AS changes FROM pragma_data_version');
    this.state = db.prepare(
      `SELECT (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'message_vector_saves') AS saves,
              (SELECT generation FROM message_terms_state WHERE user_id = @user AND agent_id = @agent) AS generation`,
    );
    this.rowsOf = db
      .prepare(
        `SELECT m.seq, m.session_key, v.embedding FROM messages AS m CROSS JOIN message_vectors AS v ON v.message_seq = m.seq
         WHERE m.user_id = ? AND m.agent_id = ? AND v.embedder = ? AND length(v.embedding) = ?`,
      )
      .raw();
    // CROSS JOIN keeps the `saved` index outermost: only the vectors saved since are read, each joined to its message.
    this.savedAfter = db
      .prepare(
        `SELECT v.message_seq, m.session_key, v.embedder, v.embedding FROM message_vectors AS v CROSS JOIN messages AS m ON m.seq = v.message_seq
         WHERE v.saved > ? AND m.user_id = ? AND m.agent_id = ? ORDER BY v.saved`,
      )
      .raw();
    this.readSnapshot = db.prepare('SELECT part, parts, generation, saves, data FROM message_vector_snapshots WHERE user_id = ? AND agent_id = ? AND embedder = ? ORDER BY part');
    this.floats = db.prepare('SELECT v.message_seq, v.embedding FROM json_each(?) AS j CROSS JOIN message_vectors AS v ON v.message_seq = j.value WHERE v.embedder = ?').raw();
  }

  /** The index for `db`, or null when this runtime has no WebAssembly SIMD. */
  static open(db: Database.Database, options: MessageVectorIndexOptions = {}): MessageVectorIndex | null {
    return int8ScanAvailable() ? new MessageVectorIndex(db, options) : null;
  }

  /** Bytes this index holds in memory for its scopes' rows (codes and scales, `seq`s, sessions). */
  get byteLength(): number {
    let bytes = 0;
    for (const entry of this.scopes.values()) bytes += entry.codes.byteLength + entry.bits.byteLength + entry.seqs.byteLength + entry.sessions.byteLength;
    return bytes;
  }

  /** Bytes this index holds for `scope`'s rows of any embedder (int8 codes and scales, sign codes, `seq`s, sessions); 0 when none. */
  heldBytes(scope: Scope): number {
    const entry = this.scopes.get(JSON.stringify([scope.userId, scope.agentId]));
    if (entry === undefined) return 0;
    const perRow = entry.codes.width + 8 + (entry.center === null ? 0 : entry.bits.width) + 8 + 4;
    return entry.size * perRow;
  }

  /** Drops `scope`'s rows from memory; its next search loads them again (from its snapshot when there is one). */
  release(scope: Scope): void {
    this.scopes.delete(JSON.stringify([scope.userId, scope.agentId]));
  }

  /**
   * The `k` messages of `scope` nearest to `vector` by cosine (optionally in one session), nearest first:
   * exact on a session and on scopes under the sign-bit stage's size, else exact among its candidates.
   * With a `floor`, only the hits whose similarity reaches it are promised: the vectors of rows that
   * cannot reach it are not read, so fewer than `k` hits, or some below the floor, may come back.
   */
  search(scope: Scope, embedderId: string, vector: Float32Array, sessionKey: string | undefined, k: number, floor = -Infinity): KnnHit[] {
    const query = quantise(vector);
    if (query === null || k <= 0) return [];
    const entry = this.current(scope, embedderId, vector.length);
    let subset: ArrayLike<number> | undefined;
    const candidates = k * (this.options.candidatesPerNeighbour ?? CANDIDATES_PER_NEIGHBOUR);
    if (sessionKey !== undefined) {
      const session = entry.sessionIds.get(sessionKey);
      if (session === undefined) return [];
      const rows: number[] = [];
      for (let row = 0; row < entry.size; row++) if (entry.sessions[row] === session) rows.push(row);
      subset = rows;
    } else if (entry.size >= (this.options.approximateFrom ?? Math.max(EXACT_SCAN_BYTES / entry.codes.width, candidates * APPROXIMATE_FROM_CANDIDATES))) {
      if (entry.center === null || entry.size >= 2 * entry.codedSize) {
        makeCodes(entry);
        this.snapshot(scope, entry);
      }
      const code = new Uint8Array(entry.bits.width);
      entry.projection.encode(vector, code, entry.center!, 1 / norm(vector));
      subset = entry.bits.fewest(code, entry.size, candidates);
      this.counts.approximate++;
    }
    const size = subset?.length ?? entry.size;
    if (size === 0) return [];
    return this.nearest(entry, subset, size, query, vector, Math.min(k, size), floor, embedderId);
  }

  /**
   * Exact top `k` of the scope's rows (or of `subset`): every row's int8 similarity from one scan, then
   * the rows in decreasing int8 similarity are re-ranked exactly, `k` at first and then as many again as
   * read so far, until the bound proves the top k complete: a row not yet read has exact similarity at most its int8 similarity
   * plus the row and query quantisation slack, and no unread row has a higher int8 similarity than the
   * next one in line.
   */
  private nearest(
    entry: ScopeVectors,
    subset: ArrayLike<number> | undefined,
    size: number,
    query: NonNullable<Quantised>,
    vector: Float32Array,
    k: number,
    floor: number,
    embedderId: string,
  ): KnnHit[] {
    // Each row's dot product with the query code over its code's norm: its int8 similarity × ‖query code‖.
    const scaled = entry.codes.scan(query.code, entry.size, subset);
    const seqOf = (i: number): number => entry.seqs[subset === undefined ? i : subset[i]!]!;
    const slack = entry.slack + query.slack + ROUNDING_SLACK;
    const queryNorm = norm(vector);
    const ranked: { seq: number; similarity: number }[] = [];
    let count = Math.min(size, k * OVERSAMPLE);
    let order = bestOf(scaled, size, count);
    // The best exact similarity row order[i] can have: its int8 similarity plus the quantisation slack.
    const bound = (i: number): number => scaled[order[i]!]! * query.inverse + slack;
    let read = 0;
    for (;;) {
      // Rows that cannot reach the floor are never read: the batch ends before the first of them.
      let end = Math.min(count, read + Math.max(k, read));
      if (floor > -Infinity) for (let i = read; i < end; i++) if (bound(i) < floor) end = i;
      if (end === read) break;
      const batch = Array.from(order.subarray(read, end), seqOf);
      read += batch.length;
      for (const [seq, blob] of this.floats.iterate(JSON.stringify(batch), embedderId) as Iterable<[number, Buffer]>) {
        ranked.push({ seq, similarity: similarity(vector, queryNorm, blob) });
      }
      ranked.sort((a, b) => b.similarity - a.similarity || a.seq - b.seq);
      if (ranked.length > k) ranked.length = k;
      const kth = ranked.length === k ? ranked[k - 1]!.similarity : -Infinity;
      if (read === size) break;
      if (read === count) {
        count = Math.min(size, count * OVERSAMPLE);
        order = bestOf(scaled, size, count);
      }
      // The best int8 similarity not yet read bounds every row not yet read.
      if (bound(read) <= kth || bound(read) < floor) break;
    }
    this.counts.searches++;
    this.counts.reranked += read;
    return ranked.map((hit) => ({ seq: hit.seq, distance: 1 - hit.similarity }));
  }

  /** The scope's rows, brought up to date with the database (nothing is read when the database has not changed). */
  private current(scope: Scope, embedderId: string, dimensions: number): ScopeVectors {
    const key = JSON.stringify([scope.userId, scope.agentId]);
    const mark = this.changeMark();
    let entry = this.scopes.get(key);
    if (entry !== undefined && entry.embedder === embedderId && entry.dimensions === dimensions && entry.checkedAt === mark) return entry;
    const { saves, generation } = this.readState(scope);
    if (entry === undefined || entry.embedder !== embedderId || entry.dimensions !== dimensions || entry.generation !== generation) {
      entry = this.load(scope, embedderId, dimensions);
      this.scopes.set(key, entry);
    } else if (saves > entry.saves) {
      for (const [seq, sessionKey, embedder, blob] of this.savedAfter.iterate(entry.saves, scope.userId, scope.agentId) as Iterable<[number, string, string, Buffer | null]>) {
        const vector = embedder === embedderId && blob !== null && blob.length === dimensions * 4 ? viewOf(blob) : null;
        put(entry, seq, sessionKey, vector);
      }
      entry.saves = saves;
    }
    // The mark taken before the look-ups: a change made since shows as a new mark on the next search.
    entry.checkedAt = mark;
    return entry;
  }

  /**
   * The scope's rows and the counters they reflect, in one read transaction: from its snapshot when one
   * of this embedder and generation exists (then the vectors saved since it), else from every vector.
   */
  private load(scope: Scope, embedderId: string, dimensions: number): ScopeVectors {
    return this.db.transaction(() => {
      const { saves, generation } = this.readState(scope);
      const snapshot = this.snapshotOf(scope, embedderId, dimensions, generation, saves);
      if (snapshot !== null) {
        this.counts.snapshots++;
        for (const [seq, sessionKey, embedder, blob] of this.savedAfter.iterate(snapshot.saves, scope.userId, scope.agentId) as Iterable<[number, string, string, Buffer | null]>) {
          put(snapshot, seq, sessionKey, embedder === embedderId && blob !== null && blob.length === dimensions * 4 ? viewOf(blob) : null);
        }
        snapshot.saves = saves;
        return snapshot;
      }
      const entry = emptyScope(embedderId, dimensions, generation, saves);
      for (const [seq, sessionKey, blob] of this.rowsOf.iterate(scope.userId, scope.agentId, embedderId, dimensions * 4) as Iterable<[number, string, Buffer]>) {
        put(entry, seq, sessionKey, viewOf(blob));
      }
      return entry;
    })();
  }

  /**
   * The scope's rows as its snapshot holds them, or null when it has none usable: of another generation,
   * not yet (or no longer) a whole set of parts of one snapshot, or unreadable.
   */
  private snapshotOf(scope: Scope, embedderId: string, dimensions: number, generation: number, saves: number): ScopeVectors | null {
    const entry = emptyScope(embedderId, dimensions, generation, 0);
    const codeWidth = entry.bits.width;
    // The first part's counters and length, and the parts read so far.
    const read: { head: { parts: number; generation: number; saves: number; length: number } | null; parts: number } = { head: null, parts: 0 };
    const rows = this.readSnapshot.iterate(scope.userId, scope.agentId, embedderId) as Iterable<{ part: number; parts: number; generation: number; saves: number; data: Buffer }>;
    // The parts in order, each checked to belong to one whole snapshot of this generation; any other
    // counts as none (thrown, caught below).
    function* pieces(): Generator<Uint8Array> {
      for (const row of rows) {
        if (read.head === null) {
          if (row.generation !== generation || row.saves > saves) throw new Error('vector snapshot: of another generation or newer than the state');
          read.head = { parts: row.parts, generation: row.generation, saves: row.saves, length: row.data.length };
        }
        const head = read.head;
        if (row.part !== read.parts || row.parts !== head.parts || row.generation !== head.generation || row.saves !== head.saves)
          throw new Error('vector snapshot: parts of different snapshots');
        read.parts++;
        yield row.data;
      }
    }
    try {
      const image = readVectorSnapshot(pieces(), (layout) => {
        // Every part but the last is as long as the first: the whole must end within the last one.
        const { parts, length } = read.head!;
        if (layout.bytes > parts * length || layout.bytes <= (parts - 1) * length) throw new Error('vector snapshot: sizes do not match its parts');
        const coded = layout.codeWidth > 0;
        if (layout.dimensions !== dimensions || layout.width !== entry.codes.width || (coded && layout.codeWidth !== codeWidth) || layout.codedSize > layout.size) {
          throw new Error('vector snapshot: of another shape');
        }
        // Both memories grow before any view of them is taken (growing one replaces its buffer).
        entry.codes.reserve(layout.size);
        if (coded) entry.bits.reserve(layout.size);
        const rowBytes = entry.codes.rows(layout.size);
        const scales = entry.codes.scales(layout.size);
        return {
          rows: new Uint8Array(rowBytes.buffer, rowBytes.byteOffset, rowBytes.byteLength),
          scales: new Uint8Array(scales.buffer, scales.byteOffset, scales.byteLength),
          codes: coded ? entry.bits.codes(layout.size) : new Uint8Array(0),
        };
      });
      // Codes come with their center, and only then.
      if (read.head === null || read.parts !== read.head.parts || (image.center !== null) !== image.codeWidth > 0) return null;
      const size = image.size;
      entry.saves = read.head.saves;
      if (image.center !== null) {
        entry.center = image.center;
        entry.codedSize = image.codedSize;
      }
      entry.seqs = image.seqs;
      entry.sessions = image.sessions;
      image.sessionKeys.forEach((key, id) => entry.sessionIds.set(key, id));
      for (let row = 0; row < size; row++) entry.rowOf.set(entry.seqs[row]!, row);
      if (entry.rowOf.size !== size) return null;
      entry.size = size;
      entry.slack = image.slack;
      return entry;
    } catch {
      // An unreadable snapshot is only a lost cache: read the vectors.
      return null;
    }
  }

  /** Hands a snapshot of `entry` (just given its sign-bit codes) to `onSnapshot`. */
  private snapshot(scope: Scope, entry: ScopeVectors): void {
    const onSnapshot = this.options.onSnapshot;
    if (onSnapshot === undefined || entry.center === null) return;
    const size = entry.size;
    const sessionKeys: string[] = [];
    for (const [key, id] of entry.sessionIds) sessionKeys[id] = key;
    const data = encodeVectorSnapshot({
      dimensions: entry.dimensions,
      width: entry.codes.width,
      codeWidth: entry.bits.width,
      size,
      slack: entry.slack,
      codedSize: entry.codedSize,
      seqs: entry.seqs.subarray(0, size),
      scales: entry.codes.scales(size),
      center: entry.center,
      sessions: entry.sessions.subarray(0, size),
      sessionKeys,
      rows: entry.codes.rows(size),
      codes: entry.bits.codes(size),
    });
    onSnapshot({ scope, embedder: entry.embedder, generation: entry.generation, saves: entry.saves, data });
  }

  private readState(scope: Scope): { saves: number; generation: number } {
    const row = this.state.get({ user: scope.userId, agent: scope.agentId }) as { saves: number | null; generation: number | null };
    return { saves: row.saves ?? 0, generation: row.generation ?? 0 };
  }

  /** A value that differs whenever the database may have changed since it was last taken (O(1)). */
  private changeMark(): string {
    const { version, changes } = this.version.get() as { version: number; changes: number };
    return `${version}:${changes}`;
  }
}

/** A scope with no rows yet, reflecting `generation` and `saves`. */
function emptyScope(embedder: string, dimensions: number, generation: number, saves: number): ScopeVectors {
  const projection = projectionOf(dimensions);
  return {
    embedder,
    dimensions,
    generation,
    saves,
    checkedAt: '',
    size: 0,
    codes: new Int8Rows(dimensions),
    bits: new BitRows(projection.bits),
    projection,
    center: null,
    codedSize: 0,
    seqs: new Float64Array(0),
    sessions: new Int32Array(0),
    sessionIds: new Map(),
    rowOf: new Map(),
    slack: 0,
  };
}

/** Sets message `seq`'s row to `vector`'s code, or removes it when `vector` is null or has no direction. */
function put(entry: ScopeVectors, seq: number, sessionKey: string, vector: Float32Array | null): void {
  let row = entry.rowOf.get(seq);
  const isNew = row === undefined;
  if (vector !== null) {
    if (row === undefined && entry.size === entry.seqs.length) grow(entry);
    const at = row ?? entry.size;
    const quantised = quantiseInto(vector, entry.codes.row(at));
    if (quantised !== null) {
      entry.codes.setScale(at, quantised.inverse);
      if (entry.center !== null) encodeRow(entry, at);
      const slack = quantised.slack;
      if (row === undefined) {
        row = entry.size++;
        entry.rowOf.set(seq, row);
      }
      entry.seqs[row] = seq;
      let session = entry.sessionIds.get(sessionKey);
      if (session === undefined) {
        session = entry.sessionIds.size;
        entry.sessionIds.set(sessionKey, session);
      }
      entry.sessions[row] = session;
      entry.slack = Math.max(entry.slack, slack);
      return;
    }
  }
  if (isNew || row === undefined) return;
  // The last row moves into the gap, so the rows stay one dense matrix.
  const last = entry.size - 1;
  if (row !== last) {
    entry.codes.copy(last, row);
    if (entry.center !== null) entry.bits.copy(last, row);
    entry.seqs[row] = entry.seqs[last]!;
    entry.sessions[row] = entry.sessions[last]!;
    entry.rowOf.set(entry.seqs[row]!, row);
  }
  entry.rowOf.delete(seq);
  entry.size = last;
}

/** (Re)makes every row's sign-bit code around the current mean of the rows' unit vectors. */
function makeCodes(entry: ScopeVectors): void {
  const { codes, dimensions, size } = entry;
  const center = new Float64Array(dimensions);
  for (let row = 0; row < size; row++) {
    const values = codes.row(row);
    const scale = codes.scale(row) / size;
    for (let i = 0; i < dimensions; i++) center[i]! += values[i]! * scale;
  }
  entry.center = center;
  entry.codedSize = size;
  entry.bits.reserve(entry.seqs.length);
  for (let row = 0; row < size; row++) encodeRow(entry, row);
}

/** Row `row`'s sign-bit code, from its int8 code (× 1 / ‖code‖, its unit vector) minus the scope's center. */
function encodeRow(entry: ScopeVectors, row: number): void {
  entry.projection.encode(entry.codes.row(row), entry.bits.row(row), entry.center!, entry.codes.scale(row));
}

function grow(entry: ScopeVectors): void {
  const capacity = Math.max(1024, entry.seqs.length * 2);
  entry.codes.reserve(capacity);
  if (entry.center !== null) entry.bits.reserve(capacity);
  const seqs = new Float64Array(capacity);
  seqs.set(entry.seqs);
  const sessions = new Int32Array(capacity);
  sessions.set(entry.sessions);
  entry.seqs = seqs;
  entry.sessions = sessions;
}

const projections = new Map<number, SignProjection>();

/** The (fixed) sign-bit projection of vectors of `dimensions` values, made once per process. */
function projectionOf(dimensions: number): SignProjection {
  let projection = projections.get(dimensions);
  if (projection === undefined) {
    projection = new SignProjection(dimensions);
    projections.set(dimensions, projection);
  }
  return projection;
}

/** The int8 code of a query (see {@link quantiseInto}), or null for a vector with no direction. */
export function quantise(vector: Float32Array): Quantised {
  const code = new Int8Array(vector.length);
  const quantised = quantiseInto(vector, code);
  return quantised === null ? null : { code, ...quantised };
}

/**
 * Writes the int8 code of a vector's direction into `out` (scaled so its largest component is ±127:
 * cosine ignores the scale, so each vector gets the finest grid it fits) and returns the distance between
 * the two unit vectors (`slack`) and 1 / ‖code‖, or null (nothing written) when the vector has no direction.
 */
function quantiseInto(vector: Float32Array, out: Int8Array): { slack: number; inverse: number } | null {
  let largest = 0;
  let sum = 0;
  for (let i = 0; i < vector.length; i++) {
    const x = vector[i]!;
    sum += x * x;
    if (Math.abs(x) > largest) largest = Math.abs(x);
  }
  const length = Math.sqrt(sum);
  if (!(length > 0) || !Number.isFinite(length)) return null;
  const scale = 127 / largest;
  let codeSum = 0;
  for (let i = 0; i < vector.length; i++) {
    const c = Math.round(vector[i]! * scale);
    out[i] = c;
    codeSum += c * c;
  }
  const codeNorm = Math.sqrt(codeSum);
  let error = 0;
  for (let i = 0; i < vector.length; i++) {
    const gap = vector[i]! / length - out[i]! / codeNorm;
    error += gap * gap;
  }
  return { slack: Math.sqrt(error), inverse: 1 / codeNorm };
}

/**
 * The indices of the `count` largest of `values[0 … size)`, largest first (equal values: lower index
 * first). One pass keeps every value at or above a threshold that a sample of about 512 values puts at
 * about twice `count` values; only those are sorted. A threshold that keeps too few falls back to sorting all.
 */
function bestOf(values: Float64Array, size: number, count: number): Int32Array {
  const byValue = (a: number, b: number): number => values[b]! - values[a]! || a - b;
  const stride = Math.max(1, Math.floor(size / BEST_OF_SAMPLE));
  if (count * 8 < size) {
    const sample = new Float64Array(Math.ceil(size / stride));
    for (let i = 0, j = 0; i < size; i += stride) sample[j++] = values[i]!;
    // Ascending (a typed array sorts by value, natively): the threshold is counted from the end.
    sample.sort();
    const threshold = sample[Math.max(0, sample.length - 1 - (2 * Math.ceil(count / stride) + 2))]!;
    const kept: number[] = [];
    for (let i = 0; i < size; i++) if (values[i]! >= threshold) kept.push(i);
    if (kept.length >= count) return Int32Array.from(kept.sort(byValue).slice(0, count));
  }
  return Int32Array.from({ length: size }, (_, i) => i)
    .sort(byValue)
    .subarray(0, count);
}

/** A float32 BLOB's values, read in place when the bytes are aligned (else copied). */
function viewOf(blob: Buffer): Float32Array {
  return blob.byteOffset % 4 === 0
    ? new Float32Array(blob.buffer, blob.byteOffset, blob.byteLength / 4)
    : new Float32Array(blob.buffer.slice(blob.byteOffset, blob.byteOffset + blob.byteLength));
}

/** Exact cosine similarity of the query and a stored vector's BLOB. */
function similarity(query: Float32Array, queryNorm: number, blob: Buffer): number {
  return cosine(query, queryNorm, viewOf(blob));
}
