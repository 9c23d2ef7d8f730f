import { z } from 'zod';
import type { ChatMessage, ChatModel } from '../llm/chat-client.js';
import { parseLenientJson } from '../llm/lenient-json.js';
import type { SequencedMessage } from '../store/store.js';
import { MEMORY_TYPES, type MemoryType } from '../types.js';
import { LIMITS } from './schemas.js';

/** A memory an extractor found, before deduplication. */
export type CandidateMemory = {
  content: string;
  type: MemoryType;
  priority: number;
  sceneName: string;
  activityStart: string | null;
  activityEnd: string | null;
  /** The batch messages it came from; never empty. */
  sourceMessageIds: string[];
  /** `rules` or `llm:<model>`. */
  extractor: string;
};

/** One extraction call's input: new messages to extract from and earlier ones for context only. */
export type ExtractionBatch = {
  messages: readonly SequencedMessage[];
  context: readonly SequencedMessage[];
};

/** Turns conversation messages into candidate memories. Implementations: {@link LlmExtractor}, `RuleExtractor`. */
export interface Extractor {
  /** Recorded on every memory it makes: `rules` or `llm:<model>`. */
  readonly name: string;
  extract(batch: ExtractionBatch, signal?: AbortSignal): Promise<CandidateMemory[]>;
}

export type LlmExtractorOptions = {
  /** Memories with a priority in [0, minPriority) are dropped; global instructions (-1) always stay. */
  minPriority: number;
};

/** Cairn's extraction prompt (its own wording; see DESIGN.md, "Memory pipeline"). */
export const EXTRACTION_PROMPT = `You turn a conversation between a user and an AI assistant into long-term memories about the user.

The input has two parts. "Context" holds earlier messages: read them to understand the conversation, but NEVER extract memories from them. "New messages" are the only messages you extract from. Each line reads [ref] [role] [time]: text.

Answer with a JSON array only (no prose, no code fences), [] when nothing is worth remembering:
[{"scene_name": "...", "memories": [{"content": "...", "type": "persona", "priority": 70, "source_message_ids": ["m2"], "activity_start": "2024-05-01", "activity_end": "2024-05-03"}]}]

Memory types:
- persona: stable facts about the user: identity, background, relationships, preferences, habits, health, values. Priority 80-100 for health, safety, strong dislikes and core identity; 50-70 for ordinary preferences.
- episodic: what happened or will happen: events, decisions, plans, commitments. Give activity_start and activity_end (ISO-8601 dates, resolved against the message time) when the time is known; leave them out otherwise. Priority 80-100 for important events and decisions, 60-70 for ordinary ones.
- instruction: standing rules the user sets for the assistant in future conversations ("always answer in French", "never use emojis"). Priority -1 for a strict rule that holds everywhere, 70-100 otherwise. A one-off request about the current task is not an instruction.
Anything below priority 50 is not worth keeping: leave it out.

Rules:
- One self-contained fact per memory that makes sense without the conversation: call the user "the user" (or by name once known), resolve pronouns, keep specifics (names, numbers, places), and write absolute dates instead of "yesterday" or "next week".
- Extract what the user states or clearly confirms. What the assistant says counts only when the user adopts it.
- Skip greetings, small talk, questions that carry no information, and facts already stated in the context.
- scene_name names the activity the memories belong to in 3-8 words (for example "Planning a trip to Japan"); related memories share one scene.
- source_message_ids lists the refs (like "m2") of the new messages each memory comes from.
- Write content and scene_name in the language the user writes in. Keep the JSON keys and the type values in English.`;

const RETRY_PROMPT = 'That answer was not valid JSON. Answer again with the JSON array only.';

const memorySchema = z.object({
  content: z.string().trim().min(1),
  type: z.preprocess((v) => (typeof v === 'string' ? v.trim().toLowerCase() : v), z.enum(MEMORY_TYPES)),
  priority: z.preprocess((v) => (typeof v === 'string' ? Number(v) : v), z.number().finite()).catch(50),
  source_message_ids: z.preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(z.coerce.string())).catch([]),
  activity_start: z.string().nullish().catch(null),
  activity_end: z.string().nullish().catch(null),
});

/** Extraction with a chat model: one call per batch, answers parsed leniently and validated memory by memory. */
export class LlmExtractor implements Extractor {
  readonly name: string;

  constructor(
    private readonly model: ChatModel,
    private readonly options: LlmExtractorOptions,
  ) {
    this.name = `llm:${model.model}`;
  }

  async extract(batch: ExtractionBatch, signal?: AbortSignal): Promise<CandidateMemory[]> {
    // Memories are about the user: system prompts and tool output are not shown to the model.
    const spoken = (messages: readonly SequencedMessage[]) => messages.filter((m) => m.role === 'user' || m.role === 'assistant');
    batch = { ...batch, messages: spoken(batch.messages), context: spoken(batch.context) };
    if (batch.messages.length === 0) return [];
    const refs = new Map<string, string>();
    const lines = (messages: readonly SequencedMessage[], prefix: string) =>
      messages.map((m, i) => {
        const ref = `${prefix}${i + 1}`;
        if (prefix === 'm') refs.set(ref, m.id);
        return `[${ref}] [${m.role}] [${m.timestamp ?? m.recordedAt}]: ${m.content}`;
      });
    const sections = [];
    if (batch.context.length > 0) sections.push(`Context (do not extract from these):\n${lines(batch.context, 'c').join('\n')}`);
    sections.push(`New messages (extract from these only):\n${lines(batch.messages, 'm').join('\n')}`);
    const messages: ChatMessage[] = [
      { role: 'system', content: EXTRACTION_PROMPT },
      { role: 'user', content: sections.join('\n\n') },
    ];
    let answer = await this.model.complete(messages, signal);
    let parsed: unknown;
    try {
      parsed = parseLenientJson(answer, isExtractionShape);
    } catch {
      // One immediate re-ask; a second malformed answer fails the batch, which is retried later.
      answer = await this.model.complete([...messages, { role: 'assistant', content: answer }, { role: 'user', content: RETRY_PROMPT }], signal);
      parsed = parseLenientJson(answer, isExtractionShape);
    }
    const batchIds = new Set(batch.messages.map((m) => m.id));
    const fallbackSources = batch.messages.filter((m) => m.role === 'user').map((m) => m.id);
    const out: CandidateMemory[] = [];
    for (const scene of scenesOf(parsed)) {
      for (const raw of scene.memories) {
        const result = memorySchema.safeParse(raw);
        if (!result.success) continue;
        const m = result.data;
        const priority = Math.round(m.priority);
        if (priority >= 0 && priority < this.options.minPriority) continue;
        // Only new messages can be sources: a ref to a context message (or an unknown id) is dropped.
        const sources = [...new Set(m.source_message_ids.map((ref) => refs.get(ref) ?? ref).filter((id) => batchIds.has(id)))];
        out.push({
          content: m.content.slice(0, LIMITS.memoryLength),
          type: m.type,
          priority: Math.max(-1, Math.min(100, priority)),
          sceneName: scene.name.slice(0, LIMITS.sceneLength),
          activityStart: isoOrNull(m.activity_start),
          activityEnd: isoOrNull(m.activity_end),
          sourceMessageIds: sources.length > 0 ? sources : fallbackSources.length > 0 ? fallbackSources : [...batchIds],
          extractor: this.name,
        });
      }
    }
    return out;
  }
}

type Scene = { name: string; memories: unknown[] };

function isExtractionShape(value: unknown): boolean {
  if (Array.isArray(value)) return value.every((item) => typeof item === 'object' && item !== null);
  return typeof value === 'object' && value !== null && ('scenes' in value || 'memories' in value);
}

/** Accepts the asked-for shape and the near misses models produce: a bare memory list, `{scenes}`, `{memories}`. */
function scenesOf(value: unknown): Scene[] {
  const list: unknown[] = Array.isArray(value)
    ? value
    : typeof value === 'object' && value !== null
      ? 'scenes' in value && Array.isArray(value.scenes)
        ? value.scenes
        : [value]
      : [];
  const scenes: Scene[] = [];
  const loose: unknown[] = [];
  for (const item of list) {
    if (typeof item !== 'object' || item === null) continue;
    const record = item as Record<string, unknown>;
    if (Array.isArray(record.memories)) {
      const name = typeof record.scene_name === 'string' ? record.scene_name.trim() : typeof record.scene === 'string' ? record.scene.trim() : '';
      scenes.push({ name, memories: record.memories });
    } else if ('content' in record) {
      loose.push(record);
    }
  }
  if (loose.length > 0) scenes.push({ name: '', memories: loose });
  return scenes;
}

function isoOrNull(value: string | null | undefined): string | null {
  if (!value) return null;
  const trimmed = value.trim();
  return trimmed !== '' && !Number.isNaN(Date.parse(trimmed)) ? trimmed.slice(0, LIMITS.timestampLength) : null;
}
