import type { ConversationHit } from './conversation-search.js';
import type { MemoryHit } from './memory-search.js';

/** Text shown when neither retrieval path can run (the seed's configuration message). */
export const SEARCH_UNAVAILABLE_MESSAGE =
  'Embedding service is not configured and FTS is not available. Memory search requires an embedding provider or FTS5 support. ' +
  'Please configure an embedding provider in the embedding.provider setting (e.g. openai_compatible).';

/** The seed's memory_search text: a header and one block per memory. */
export function formatMemoryResults(hits: readonly MemoryHit[]): string {
  if (hits.length === 0) return 'No matching memories found.';
  const lines = [`Found ${hits.length} matching memories:`];
  for (const hit of hits) {
    const priority = hit.priority < 0 ? ' (global instruction)' : ` (priority: ${hit.priority})`;
    const scene = hit.scene_name ? ` [scene: ${hit.scene_name}]` : '';
    lines.push(`- **[${hit.type}]**${priority}${scene} (score: ${hit.score.toFixed(3)})`);
    lines.push(`  ${hit.content}`);
  }
  return lines.join('\n');
}

/** The seed's conversation_search text: a header and one block per message. */
export function formatConversationResults(hits: readonly ConversationHit[]): string {
  if (hits.length === 0) return 'No matching conversation messages found.';
  const lines = [`Found ${hits.length} matching message(s):`];
  for (const hit of hits) {
    lines.push('---');
    const match = hit.match === 'context' ? ' (matched through the previous message, not this one)' : '';
    lines.push(`**[${hit.role}]** Session: ${hit.session_key} [${hit.timestamp ?? hit.recorded_at}] (score: ${hit.score.toFixed(3)})${match}`);
    lines.push('');
    lines.push(hit.content);
  }
  return lines.join('\n');
}
