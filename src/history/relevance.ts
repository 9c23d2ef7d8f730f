import type { Embedder } from '../embed/embedder.js';
import type { ChatModel } from '../llm/chat-client.js';
import { parseLenientJson } from '../llm/lenient-json.js';
import { dot } from '../search/vector-math.js';

/** What a judge sees of a past run: its request and (the start of) its rendered text. */
export type JudgedRun = { objective: string; text: string };

/**
 * Decides whether a past run is unrelated to the current request (chat_history's withheld note).
 * Returns the confidence, 0-1, that the run is unrelated, or null to abstain (the run is then shown).
 */
export interface RelevanceJudge {
  readonly name: string;
  unrelatedConfidence(request: string, run: JudgedRun, signal: AbortSignal): Promise<number | null>;
}

/** Characters of a run's text a judge is shown besides its objective. */
export const JUDGED_RUN_CHARS = 2_000;

/**
 * The default judge: cosine similarity of the request's embedding and the run's (objective plus the
 * start of its text), with confidence = 1 − similarity clamped to [0, 1]. Embeddings of unrelated texts
 * sit near 0 (confidence near 1); related ones share meaning and score well above 0.3 (confidence ≤ 0.7).
 */
export class EmbeddingJudge implements RelevanceJudge {
  readonly name = 'embedding';

  constructor(private readonly embedder: Embedder) {}

  async unrelatedConfidence(request: string, run: JudgedRun, signal: AbortSignal): Promise<number | null> {
    const [a, b] = await this.embedder.embed([request, judgedText(run)], signal);
    if (!a || !b) return null;
    return Math.min(1, Math.max(0, 1 - dot(a, b)));
  }
}

/** A chat model asked whether the run helps with the request; it answers with its own confidence. */
export class LlmJudge implements RelevanceJudge {
  readonly name = 'llm';

  constructor(private readonly model: ChatModel) {}

  async unrelatedConfidence(request: string, run: JudgedRun, signal: AbortSignal): Promise<number | null> {
    const answer = await this.model.complete(
      [
        {
          role: 'system',
          content:
            'You decide whether an earlier agent run is related to the current request, i.e. whether reading it could help answer it. ' +
            'Reply with JSON only: {"related": true|false, "confidence": <0..1, how sure you are of that answer>}.',
        },
        { role: 'user', content: `Current request:\n${request}\n\nEarlier run:\n${judgedText(run)}` },
      ],
      signal,
    );
    const verdict = parseLenientJson(answer, isVerdict) as Verdict;
    const confidence = Math.min(1, Math.max(0, verdict.confidence));
    return verdict.related ? 1 - confidence : confidence;
  }
}

type Verdict = { related: boolean; confidence: number };

function isVerdict(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.related === 'boolean' && typeof v.confidence === 'number' && Number.isFinite(v.confidence);
}

function judgedText(run: JudgedRun): string {
  return `${run.objective}\n${run.text.slice(0, JUDGED_RUN_CHARS)}`;
}
