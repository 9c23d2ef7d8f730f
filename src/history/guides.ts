import { readdirSync, readFileSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import { z } from 'zod';
import { CairnError, describeError } from '../errors.js';
import { BUILTIN_GUIDES } from './builtin-guides.js';

/** A topic name: what a guide file may be called (`<topic>.md`). */
const TOPIC_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** Parameters of reasoning_guide. */
export const reasoningGuideParams = z.object({
  topics: z
    .array(z.string(), { error: 'topics is required (an array of topic names)' })
    .min(1, 'topics needs at least one topic')
    .max(32)
    .describe('Every guide this turn needs, in one call; each comes back under a ## <topic> heading.'),
});
export type ReasoningGuideParams = z.infer<typeof reasoningGuideParams>;

/** The guides found (canonical names, request order) and the requested names that are no topic. */
export type ReasoningGuideResult = { text: string; topics: string[]; unknown: string[] };

/** Names topics had before (seed 001: `web_search` was `rag_web` before v1.2.1); asked for by either name, a guide answers under its own. */
const TOPIC_ALIASES: ReadonlyMap<string, string> = new Map([
  ['rag_web', 'web_search'],
  ['subagent_delegation', 'subagent_dispatch'],
]);

/**
 * reasoning_guide: built-in rule sets plus a configured folder of `<topic>.md` files that add topics or
 * replace built-in ones. The folder is read on every call, so edits apply without a restart.
 */
export class Guides {
  constructor(
    private readonly dir: string | undefined,
    private readonly warn: (message: string) => void,
  ) {}

  /** Every topic name, sorted. */
  topics(): string[] {
    return [...this.load().keys()].sort();
  }

  /**
   * The requested guides joined under `## <topic>` headings, in request order, duplicates dropped; old names
   * answer under the current one. Unknown names are listed after the guides with the available topics;
   * only a request with no known topic at all is an error.
   */
  read(params: ReasoningGuideParams): ReasoningGuideResult {
    const guides = this.load();
    const available = [...guides.keys()].sort().join(', ');
    const requested = [...new Set(params.topics.map((t) => t.trim()).filter((t) => t !== ''))];
    if (requested.length === 0) throw new CairnError('invalid_input', `topics is required; available: ${available}`);
    // Requested names are looked up in Maps, never as object properties: `constructor` or `__proto__`
    // would otherwise find Object.prototype's members.
    const canonical = (t: string) => (guides.has(t) ? t : (TOPIC_ALIASES.get(t) ?? t));
    const topics = [...new Set(requested.map(canonical).filter((t) => guides.has(t)))];
    const unknown = requested.filter((t) => !guides.has(canonical(t)));
    const unknownText = `unknown topic${unknown.length > 1 ? 's' : ''} ${unknown.map((t) => `"${t}"`).join(', ')}; available: ${available}`;
    if (topics.length === 0) throw new CairnError('invalid_input', unknownText);
    const text = topics.map((t) => `## ${t}\n\n${guides.get(t)!.trim()}`).join('\n\n');
    return { text: unknown.length > 0 ? `${text}\n\n(${unknownText})` : text, topics, unknown };
  }

  private load(): Map<string, string> {
    const guides = new Map(Object.entries(BUILTIN_GUIDES));
    if (this.dir === undefined) return guides;
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (err) {
      this.warn(`reasoning_guide: cannot read guides_dir ${this.dir}: ${describeError(err)}`);
      return guides;
    }
    for (const name of names) {
      if (extname(name).toLowerCase() !== '.md') continue;
      const topic = basename(name, extname(name)).toLowerCase();
      if (!TOPIC_NAME.test(topic)) continue;
      try {
        const text = readFileSync(join(this.dir, name), 'utf8').trim();
        if (text !== '') guides.set(topic, text);
      } catch (err) {
        this.warn(`reasoning_guide: cannot read ${join(this.dir, name)}: ${describeError(err)}`);
      }
    }
    return guides;
  }
}
