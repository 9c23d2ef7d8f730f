import type { RankedHit } from '../types.js';

/** The Reciprocal Rank Fusion constant used by the seed (K = 60). */
export const RRF_K = 60;

/**
 * Reciprocal Rank Fusion: each id scores Σ 1 / (k + rank + 1) over the lists it appears in (rank 0-based).
 * Output is sorted by fused score, best first; ties keep first-seen order. Pure.
 */
export function rrfFuse(lists: readonly (readonly RankedHit[])[], k: number = RRF_K): RankedHit[] {
  const scores = new Map<string, number>();
  for (const list of lists) {
    const seen = new Set<string>();
    list.forEach((hit, rank) => {
      // An id repeated inside one list counts once, at its best rank.
      if (seen.has(hit.id)) return;
      seen.add(hit.id);
      scores.set(hit.id, (scores.get(hit.id) ?? 0) + 1 / (k + rank + 1));
    });
  }
  const fused = [...scores].map(([id, score]) => ({ id, score }));
  // Array.prototype.sort is stable, so equal scores keep insertion order.
  return fused.sort((a, b) => b.score - a.score);
}
