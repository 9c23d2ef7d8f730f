import type { RankedHit } from '../types.js';

/** The Reciprocal Rank Fusion constant used by the seed (K = 60). */
export const RRF_K = 60;

/**
 * Reciprocal Rank Fusion: each id scores Σ w / (k + rank + 1) over the lists it appears in (rank 0-based),
 * where `w` is the list's weight (`weights[i]`, default 1: plain RRF). Output is sorted by fused score,
 * best first; ties keep first-seen order. Pure.
 *
 * A weight below 1 makes a list a weak vote: with K = 60 and weight 0.1, a list's first hit adds
 * 0.1 / 61 — less than the gap between ranks 1 and 10 of a full-weight list — so it re-orders and
 * extends the other lists more than it displaces them (DESIGN.md, "Ranking").
 */
export function rrfFuse(lists: readonly (readonly RankedHit[])[], k: number = RRF_K, weights: readonly number[] = []): RankedHit[] {
  for (const w of weights) {
    if (!(Number.isFinite(w) && w > 0)) throw new RangeError(`RRF list weights must be finite and positive, got ${w}`);
  }
  const scores = new Map<string, number>();
  lists.forEach((list, index) => {
    const weight = weights[index] ?? 1;
    const seen = new Set<string>();
    list.forEach((hit, rank) => {
      // An id repeated inside one list counts once, at its best rank.
      if (seen.has(hit.id)) return;
      seen.add(hit.id);
      scores.set(hit.id, (scores.get(hit.id) ?? 0) + weight / (k + rank + 1));
    });
  });
  const fused = [...scores].map(([id, score]) => ({ id, score }));
  // Array.prototype.sort is stable, so equal scores keep insertion order.
  return fused.sort((a, b) => b.score - a.score);
}
