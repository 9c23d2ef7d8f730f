import { CairnError } from '../errors.js';

const FENCE = /```[a-zA-Z0-9_-]*[ \t]*\r?\n?([\s\S]*?)```/g;
const THINKING = /<(think|thinking|reasoning)>[\s\S]*?<\/\1>/gi;
/** Candidate JSON values tried per text; a model answer rarely holds more than a few brackets before the JSON. */
const MAX_CANDIDATES = 32;

/**
 * Parses the JSON a language model returned, forgiving what models commonly get wrong: reasoning blocks,
 * code fences, prose before or after the value, trailing commas, raw control characters inside strings,
 * smart quotes around strings, and Python's `True`/`False`/`None`. `accept` rejects a value of the wrong
 * shape (say `[1]` quoted in the prose) so the search goes on. Throws `llm_failed` when no acceptable JSON
 * value can be recovered. The one place model output is parsed.
 */
export function parseLenientJson(text: string, accept: (value: unknown) => boolean = () => true): unknown {
  const cleaned = text
    .replace(/^\uFEFF/, '')
    .replace(THINKING, '')
    .trim();
  const sources = [...[...cleaned.matchAll(FENCE)].map((m) => m[1]!.trim()), cleaned];
  for (const source of sources) {
    const direct = tryParse(source);
    if (direct.ok && accept(direct.value)) return direct.value;
    let tried = 0;
    for (let start = 0; start < source.length && tried < MAX_CANDIDATES; start++) {
      const ch = source[start];
      if (ch !== '[' && ch !== '{') continue;
      tried++;
      const end = matchingClose(source, start);
      if (end === -1) continue;
      const parsed = tryParse(repair(source.slice(start, end + 1)));
      if (parsed.ok && accept(parsed.value)) return parsed.value;
    }
  }
  const preview = cleaned.length > 120 ? `${cleaned.slice(0, 120)}…` : cleaned;
  throw new CairnError('llm_failed', `model output is not valid JSON: ${JSON.stringify(preview)}`);
}

function tryParse(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** Index of the bracket closing the one at `start`, skipping brackets inside strings; -1 when unbalanced. */
function matchingClose(text: string, start: number): number {
  const stack: string[] = [];
  let quote: string | null = null;
  for (let i = start; i < text.length; i++) {
    const ch = text[i]!;
    if (quote !== null) {
      if (ch === '\\') i++;
      else if (ch === quote) quote = null;
      continue;
    }
    if (ch === '"') quote = ch;
    else if (ch === '[') stack.push(']');
    else if (ch === '{') stack.push('}');
    else if (ch === ']' || ch === '}') {
      if (stack.pop() !== ch) return -1;
      if (stack.length === 0) return i;
    }
  }
  return -1;
}

/**
 * One pass over a JSON-like text: escapes control characters inside strings, drops commas before a closing
 * bracket, turns smart quotes outside strings into plain ones and Python literals into JSON ones.
 */
function repair(text: string): string {
  let out = '';
  let opener: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (opener !== null) {
      if (ch === '\\') {
        out += ch + (text[i + 1] ?? '');
        i++;
      } else if (ch === '"' || (opener !== '"' && ch === '\u201d')) {
        opener = null;
        out += '"';
      } else if (ch < ' ') {
        out += CONTROL_ESCAPES[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
      } else {
        out += ch;
      }
      continue;
    }
    if (ch === '"' || ch === '\u201c') {
      opener = ch;
      out += '"';
    } else if (ch === ',') {
      CLOSING_AHEAD.lastIndex = i + 1;
      if (!CLOSING_AHEAD.test(text)) out += ch;
    } else if (/[A-Za-z]/.test(ch)) {
      WORD.lastIndex = i;
      const word = WORD.exec(text)![0];
      out += PYTHON_LITERALS[word] ?? word;
      i += word.length - 1;
    } else {
      out += ch;
    }
  }
  return out;
}

const CLOSING_AHEAD = /\s*[\]}]/y;
const WORD = /[A-Za-z]+/y;
const CONTROL_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };
const PYTHON_LITERALS: Record<string, string> = { True: 'true', False: 'false', None: 'null' };
