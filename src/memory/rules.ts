import { setImmediate as nextTurn } from 'node:timers/promises';
import type { MemoryType } from '../types.js';
import type { CandidateMemory, ExtractionBatch, Extractor } from './extract.js';

/** What one rule makes of one match. `slot` marks a single-valued fact: a newer one replaces the older. */
type RuleHit = { content: string; type: MemoryType; priority: number };

type Rule = {
  /** Stable name, used in tests and nowhere else. */
  id: string;
  /** Global, Unicode. Rules marked `sentenceStart` only match at the start of a sentence (imperatives). */
  pattern: RegExp;
  build: (match: RegExpMatchArray) => RuleHit | null;
};

const END = '(?=$|[,;:()，；：。！？!?.])';
/** A clause in Chinese ends at punctuation; in English at punctuation or a conjunction that starts another clause. */
const EN_OBJECT = `(.{2,200}?)(?=$|[;:()]|,\\s*(?:but|and|so|because|though|although|while|which)\\b|\\s+(?:but|because|though|although|whereas|so that)\\b)`;
const ZH_OBJECT = '([^，,；;。！？!?：:（）()]{1,100})';
const NAME = "(\\p{Lu}[\\p{L}'’-]*(?:\\s+\\p{Lu}[\\p{L}'’-]*){0,3})";
const ZH_ADVERB = '(很|非常|特别|最|也|真的|超|一直|更)?';
/** Diets and conditions stated as "I'm …" that say who the user is. */
const DIETS = 'vegetarian|vegan|pescatarian|pescetarian|gluten[- ]free|lactose[- ]intolerant|coeliac|celiac|diabetic|kosher|halal|teetotal|sober';
/** A time word that may open a Chinese plan ("下周三我要去上海"). */
const ZH_WHEN = '今天|明天|后天|今晚|明早|下周[一二三四五六日天末]?|下个?月|下星期[一二三四五六日天]?|周[一二三四五六日末]|星期[一二三四五六日天]|月底|年底|明年';
const PRONOUN_ONLY = /^(?:it|that|this|them|you|him|her|those|these|one|so|too)(?:\s+(?:a lot|so much|very much|too|as well|more))?$/i;
const ZH_PRONOUN_ONLY = /^(?:你|他|她|它|这|那|这个|那个|你们|他们|她们|它们)(?:了|啊|呀|哦|吧)?$/u;
const TEMPORAL =
  /\d|\b(?:today|tomorrow|yesterday|tonight|next|last|this (?:week|month|year|weekend)|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|september|october|november|december)\b|今天|明天|后天|昨天|下周|上周|下个月|上个月|今年|明年|去年|周[一二三四五六日末]|星期/i;

const EN_VERBS: Record<string, string> = {
  like: 'likes',
  love: 'loves',
  prefer: 'prefers',
  enjoy: 'enjoys',
  adore: 'adores',
  hate: 'hates',
  dislike: 'dislikes',
  detest: 'detests',
  loathe: 'loathes',
  "can't stand": "can't stand",
  'can’t stand': "can't stand",
  'cannot stand': "can't stand",
  "don't like": "doesn't like",
  'don’t like': "doesn't like",
  'do not like': "doesn't like",
};

/**
 * The deterministic extractor's rules (English, then Chinese), for explicit statements only: names,
 * likes and dislikes, favourites, work, home, habits, standing instructions and "remember that…".
 * Order matters: where two rules match overlapping text, the earlier wins.
 */
export const RULES: readonly Rule[] = [
  {
    id: 'en.name',
    pattern: new RegExp(`\\b(?:[Mm]y name is|[Mm]y name's|[Cc]all me|I go by)\\s+${NAME}`, 'gu'),
    build: (m) => ({ content: `The user's name is ${m[1]}.`, type: 'persona', priority: 90 }),
  },
  {
    id: 'en.favorite',
    pattern: new RegExp(`\\bmy (?:favou?rite|fav)\\s+([\\p{L}\\s-]{1,40}?)\\s+(is|are)\\s+${EN_OBJECT}`, 'giu'),
    build: (m) => ({ content: `The user's favorite ${m[1]!.toLowerCase()} ${m[2]!.toLowerCase()} ${thirdPerson(m[3]!)}.`, type: 'persona', priority: 70 }),
  },
  {
    id: 'en.dislike',
    pattern: new RegExp(
      `\\bI\\s+(?:really\\s+|absolutely\\s+|just\\s+|truly\\s+)?(hate|dislike|detest|loathe|can't stand|can’t stand|cannot stand|don't like|don’t like|do not like)\\s+${EN_OBJECT}`,
      'giu',
    ),
    build: (m) => objectFact(EN_VERBS[m[1]!.toLowerCase()]!, m[2]!, 75),
  },
  {
    id: 'en.preference',
    pattern: new RegExp(`\\bI\\s+(?:really\\s+|also\\s+|truly\\s+|absolutely\\s+|just\\s+|do\\s+)?(like|love|prefer|enjoy|adore)\\s+${EN_OBJECT}`, 'giu'),
    build: (m) => objectFact(EN_VERBS[m[1]!.toLowerCase()]!, m[2]!, 70),
  },
  {
    id: 'en.job',
    pattern: new RegExp(`\\b(?:I work as|I'm employed as|I am employed as|[Mm]y job is|[Mm]y profession is)\\s+${EN_OBJECT}`, 'gu'),
    build: (m) => ({ content: `The user works as ${thirdPerson(m[1]!)}.`, type: 'persona', priority: 80 }),
  },
  {
    id: 'en.employer',
    pattern: new RegExp(`\\bI work (?:at|for)\\s+${EN_OBJECT}`, 'giu'),
    build: (m) => ({ content: `The user works at ${thirdPerson(m[1]!)}.`, type: 'persona', priority: 80 }),
  },
  {
    id: 'en.location',
    pattern: new RegExp(`\\bI(?:\\s+currently)?\\s+(?:live in|am based in|'m based in)\\s+${EN_OBJECT}`, 'giu'),
    build: (m) => ({ content: `The user lives in ${thirdPerson(m[1]!)}.`, type: 'persona', priority: 80 }),
  },
  {
    id: 'en.diet',
    pattern: new RegExp(`\\bI(?:'m|’m| am)\\s+(?:(?:a|now|strictly|fully|also)\\s+)*(${DIETS})\\b`, 'giu'),
    build: (m) => ({ content: `The user is ${m[1]!.toLowerCase()}.`, type: 'persona', priority: 85 }),
  },
  {
    id: 'en.allergy',
    pattern: new RegExp(`\\bI(?:'m|’m| am)\\s+(?:(?:very|severely|really|also)\\s+)?(allergic to|intolerant to|intolerant of)\\s+${EN_OBJECT}`, 'giu'),
    build: (m) => objectFact(`is ${m[1]!.toLowerCase()}`, m[2]!, 85),
  },
  {
    id: 'en.plan',
    pattern: new RegExp(`\\bI(?:'m|’m| am)\\s+(planning|organi[sz]ing|booking)\\s+${EN_OBJECT}`, 'giu'),
    build: (m) => {
      const clean = tidy(m[2]!);
      // "I'm planning a trip", "… to move": a plan; "I'm planning what to say" is not one.
      if (!clean || !/^(?:a|an|my|our|to)\s/i.test(clean)) return null;
      return { content: `The user is ${m[1]!.toLowerCase()} ${thirdPerson(clean)}.`, type: 'episodic', priority: 70 };
    },
  },
  {
    id: 'en.from-now-on',
    pattern: new RegExp(`^(?:please\\s+)?(?:from now on|going forward|from here on(?: out)?|henceforth|in future|in the future)\\s*,?\\s+${EN_OBJECT}`, 'giu'),
    build: (m) => instruction(`From now on, ${userPerson(m[1]!)}`, 90),
  },
  {
    id: 'en.always-never',
    pattern: new RegExp(`^(?:please\\s+)?(?:you should\\s+|you must\\s+)?(always|never|don't ever|do not ever)\\s+${EN_OBJECT}`, 'giu'),
    build: (m) => instruction(`${capitalize(m[1]!.toLowerCase())} ${userPerson(m[2]!)}`, 85),
  },
  {
    id: 'en.habit',
    pattern: new RegExp(`\\bI\\s+(always|never|usually|often)\\s+${EN_OBJECT}`, 'giu'),
    build: (m) => ({ content: `The user ${m[1]!.toLowerCase()} ${thirdPersonVerb(thirdPerson(m[2]!))}.`, type: 'persona', priority: 60 }),
  },
  {
    id: 'en.remind',
    pattern: new RegExp(`^(?:please\\s+)?(?:can you\\s+|could you\\s+)?remind me\\s+(that|to|about)\\s+${EN_OBJECT}`, 'giu'),
    build: (m) => remembered(m[1]!.toLowerCase() === 'that' ? capitalize(userPerson(m[2]!)) : `Remind the user ${m[1]!.toLowerCase()} ${thirdPerson(m[2]!)}`),
  },
  {
    id: 'en.remember',
    pattern: new RegExp(`^(?:please\\s+)?(?:remember|don't forget|do not forget|keep in mind|note)\\s+(?:that\\s+)?${EN_OBJECT}`, 'giu'),
    build: (m) => remembered(capitalize(userPerson(m[1]!))),
  },
  {
    id: 'zh.name',
    pattern: new RegExp(`(?:我叫|我的名字(?:是|叫)|叫我)\\s*([\\p{Script=Han}A-Za-z·]{1,12}?)(?:吧|啊|呀|哦|呢|了)?${END}`, 'gu'),
    build: (m) => ({ content: `用户的名字是${m[1]}`, type: 'persona', priority: 90 }),
  },
  {
    id: 'zh.favorite',
    pattern: new RegExp(`我最喜欢的([^，,；;。！？!?的]{1,10})是${ZH_OBJECT}`, 'gu'),
    build: (m) => ({ content: `用户最喜欢的${m[1]}是${zhUser(m[2]!)}`, type: 'persona', priority: 70 }),
  },
  {
    id: 'zh.dislike',
    pattern: new RegExp(`我${ZH_ADVERB}(不喜欢|讨厌|厌恶|受不了|反感|不爱)${ZH_OBJECT}`, 'gu'),
    build: (m) => zhObjectFact(m[1], m[2]!, m[3]!, 75),
  },
  {
    id: 'zh.preference',
    pattern: new RegExp(`我${ZH_ADVERB}(喜欢|热爱|偏爱|爱)${ZH_OBJECT}`, 'gu'),
    build: (m) => zhObjectFact(m[1], m[2]!, m[3]!, 70),
  },
  {
    id: 'zh.employer',
    pattern: new RegExp(`我(?:现在)?在([^，,；;。！？!?]{1,30}?)(?:工作|上班|任职)`, 'gu'),
    build: (m) => ({ content: `用户在${zhUser(m[1]!)}工作`, type: 'persona', priority: 80 }),
  },
  {
    id: 'zh.job',
    pattern: new RegExp(`(?:我的职业是|我的工作是|我是一名|我是一位|我是一个|我的职位是)${ZH_OBJECT}`, 'gu'),
    build: (m) => ({ content: `用户的职业是${zhUser(m[1]!)}`, type: 'persona', priority: 80 }),
  },
  {
    id: 'zh.location',
    pattern: new RegExp(`我(?:现在)?(?:住在|家在|定居在)${ZH_OBJECT}`, 'gu'),
    build: (m) => ({ content: `用户住在${zhUser(m[1]!)}`, type: 'persona', priority: 80 }),
  },
  {
    id: 'zh.plan',
    pattern: new RegExp(`(${ZH_WHEN})?我(?:${ZH_WHEN})?(要|打算|计划|准备|将要)(去|到|飞|回)${ZH_OBJECT}`, 'gu'),
    build: (m) => ({ content: `用户${m[1] ?? ''}${m[2]}${m[3]}${zhUser(m[4]!)}`, type: 'episodic', priority: 70 }),
  },
  {
    id: 'zh.from-now-on',
    pattern: new RegExp(`^(?:请)?(?:以后|今后|从现在起|从现在开始|从今天起|从今以后)[，,\\s]*(?!再|就|会|的)${ZH_OBJECT}`, 'gu'),
    build: (m) => instruction(`从现在起，${zhUser(m[1]!)}`, 90),
  },
  {
    id: 'zh.always-never',
    pattern: new RegExp(`^(?:请)?(?:你)?((?:总是|永远|始终|务必|一定要|每次都|一律|永远不要|绝对不要|千万不要|千万别|不要再|别再|永远别)${ZH_OBJECT})`, 'gu'),
    build: (m) => instruction(zhUser(m[1]!), 85),
  },
  {
    id: 'zh.habit',
    pattern: new RegExp(`我(总是|一直|从不|从来不|每天都|每天|经常)${ZH_OBJECT}`, 'gu'),
    build: (m) => ({ content: `用户${m[1]}${zhUser(m[2]!)}`, type: 'persona', priority: 60 }),
  },
  {
    id: 'zh.remember',
    pattern: new RegExp(`^(?:请)?(?:记住|记得|别忘了|不要忘了|不要忘记)[，,：:\\s]*${ZH_OBJECT}`, 'gu'),
    build: (m) => remembered(zhUser(m[1]!)),
  },
];

/** Templates of single-valued facts in both languages: a newer memory in a slot replaces the older one. */
const SLOTS: readonly { slot: string; pattern: RegExp; probe: string }[] = [
  { slot: 'name', pattern: /^The user's name is |^用户的名字是/, probe: "The user's name is 用户的名字是" },
  { slot: 'job', pattern: /^The user works as |^用户的职业是/, probe: 'The user works as 用户的职业是' },
  { slot: 'employer', pattern: /^The user works at |^用户在.+工作$/, probe: 'The user works at 用户 工作' },
  { slot: 'location', pattern: /^The user lives in |^用户住在/, probe: 'The user lives in 用户住在' },
];
const FAVORITE = /^The user's favorite (.+?) (?:is|are) |^用户最喜欢的(.+?)是/;

/** The slot of a single-valued fact written by the rules (`name`, `employer`, `favorite:color`…), or null. */
export function ruleSlot(content: string): string | null {
  const favorite = FAVORITE.exec(content);
  if (favorite) return `favorite:${(favorite[1] ?? favorite[2])!.toLowerCase()}`;
  return SLOTS.find((s) => s.pattern.test(content))?.slot ?? null;
}

/** Text whose keywords find the existing memories of a slot (both languages). */
export function slotProbe(slot: string): string {
  if (slot.startsWith('favorite:')) return `The user's favorite ${slot.slice('favorite:'.length)} 用户最喜欢的`;
  return SLOTS.find((s) => s.slot === slot)?.probe ?? slot;
}

/**
 * The zero-config extractor: finds explicit statements in the user's own messages with {@link RULES}.
 * Deterministic, offline, instant; misses everything said implicitly (that is the LLM extractor's job).
 */
export class RuleExtractor implements Extractor {
  readonly name = 'rules';

  async extract(batch: ExtractionBatch): Promise<CandidateMemory[]> {
    const out: CandidateMemory[] = [];
    let sinceYield = 0;
    for (const message of batch.messages) {
      if (message.role !== 'user') continue;
      for (const sentence of sentences(message.content)) {
        // The rules cost ~0.25 ms per KB: a batch of large messages (an import) would hold the event loop
        // for seconds, so requests get a turn between sentences every RULES_YIELD_CHARS.
        if (sinceYield >= RULES_YIELD_CHARS) {
          await nextTurn();
          sinceYield = 0;
        }
        sinceYield += sentence.length;
        for (const hit of rulesIn(sentence)) {
          out.push({ ...hit, sceneName: '', activityStart: null, activityEnd: null, sourceMessageIds: [message.id], extractor: this.name });
        }
      }
    }
    return out;
  }
}

/**
 * Characters of sentences the rule extractor reads between two turns of the event loop (~4 ms of work). A
 * request needs a few turns to be answered (accept, read, a worker's reply, write), so each slice must be a
 * small part of the 100 ms a request may wait: at 64 KB (~16 ms a slice) `/health` waited up to 62 ms.
 */
export const RULES_YIELD_CHARS = 16 * 1024;

/**
 * A sentence longer than half {@link RULES_YIELD_CHARS} (a text with no punctuation) cut at whitespace into
 * pieces of about that length, so the extractor yields within it as often as between short sentences (one
 * 190 KB sentence held the loop 32 ms).
 * A statement the rules match is far shorter than a piece; one cut through loses only that statement.
 */
function cutLong(sentence: string): string[] {
  const piece = RULES_YIELD_CHARS / 2;
  if (sentence.length <= piece) return [sentence];
  const pieces: string[] = [];
  let start = 0;
  while (sentence.length - start > piece) {
    const space = sentence.lastIndexOf(' ', start + piece);
    const end = space > start ? space : start + piece;
    pieces.push(sentence.slice(start, end));
    start = end;
  }
  pieces.push(sentence.slice(start));
  return pieces;
}

/** Every fact the rules find in one text, in order, each tagged with the rule that found it. */
export function extractByRules(text: string): (RuleHit & { rule: string })[] {
  return sentences(text).flatMap(rulesIn);
}

/** The facts of one sentence, in order. */
function rulesIn(sentence: string): (RuleHit & { rule: string })[] {
  const found: (RuleHit & { rule: string; start: number; end: number })[] = [];
  for (const rule of RULES) {
    for (const match of sentence.matchAll(rule.pattern)) {
      const start = match.index;
      const end = start + match[0].length;
      if (found.some((f) => start < f.end && end > f.start)) continue;
      const hit = rule.build(match);
      if (hit) found.push({ ...hit, rule: rule.id, start, end });
    }
  }
  found.sort((a, b) => a.start - b.start);
  return found.map(({ start: _start, end: _end, ...hit }) => hit);
}

/** Statements only: questions are dropped, and a sentence ends at terminal punctuation or a line break. */
function sentences(text: string): string[] {
  return text
    .normalize('NFKC')
    .split(/(?<=[.!?])\s+|(?<=[。！？])|[\r\n]+/)
    .flatMap(cutLong)
    .map((s) => s.trim())
    .filter((s) => s !== '' && !/[?？]$/.test(s) && !/[吗呢嘛][。！]?$/.test(s))
    .map((s) => s.replace(/[.!。！]+$/, ''));
}

function objectFact(verb: string, object: string, priority: number): RuleHit | null {
  const clean = tidy(object);
  if (!clean || PRONOUN_ONLY.test(clean)) return null;
  return { content: `The user ${verb} ${thirdPerson(clean)}.`, type: 'persona', priority };
}

function zhObjectFact(adverb: string | undefined, verb: string, object: string, priority: number): RuleHit | null {
  const clean = tidy(object);
  if (!clean || ZH_PRONOUN_ONLY.test(clean)) return null;
  return { content: `用户${adverb ?? ''}${verb}${zhUser(clean)}`, type: 'persona', priority };
}

function instruction(content: string, priority: number): RuleHit | null {
  const clean = tidy(content);
  return clean ? { content: /\p{Script=Han}$/u.test(clean) ? clean : `${clean}.`, type: 'instruction', priority } : null;
}

function remembered(content: string): RuleHit | null {
  const clean = tidy(content);
  if (!clean) return null;
  return { content: /\p{Script=Han}$/u.test(clean) ? clean : `${clean}.`, type: TEMPORAL.test(clean) ? 'episodic' : 'persona', priority: 80 };
}

function tidy(text: string): string | null {
  const clean = text.trim().replace(/[\s,;:，；：、]+$/u, '');
  return clean.length >= 1 && clean.length <= 200 ? clean : null;
}

/** First-person words of the user, as a third-person description ("my dog" → "their dog"). */
function thirdPerson(text: string): string {
  return replaceWords(text, { my: 'their', me: 'them', mine: 'theirs', myself: 'themselves', "i'm": "they're", 'i am': 'they are', i: 'they' });
}

/** First-person words of the user, addressed to the assistant ("call me Sam" → "call the user Sam"). */
function userPerson(text: string): string {
  return replaceWords(text, {
    my: "the user's",
    me: 'the user',
    mine: "the user's",
    myself: 'the user',
    "i'm": 'the user is',
    'i am': 'the user is',
    i: 'the user',
  });
}

function replaceWords(text: string, words: Record<string, string>): string {
  const keys = Object.keys(words).sort((a, b) => b.length - a.length);
  const pattern = new RegExp(`\\b(${keys.map((k) => k.replace(/'/g, "['’]")).join('|')})\\b`, 'gi');
  return text.replace(pattern, (found) => words[found.toLowerCase().replace('’', "'")] ?? found);
}

/** "wake up early" → "wakes up early": the first word conjugated for a third-person subject. */
function thirdPersonVerb(text: string): string {
  const [first = '', ...rest] = text.split(' ');
  const lower = first.toLowerCase();
  const irregular: Record<string, string> = { have: 'has', do: 'does', go: 'goes', be: 'is', am: 'is', "don't": "doesn't" };
  const modal = /^(can|will|would|should|must|could|may|might|shall|can't|won't|is|are|was|were|has|does)$/.test(lower);
  let verb = irregular[lower] ?? first;
  if (!irregular[lower] && !modal && /^[a-z]+$/.test(lower)) {
    if (/(s|sh|ch|x|z|o)$/.test(lower)) verb = `${first}es`;
    else if (/[^aeiou]y$/.test(lower)) verb = `${first.slice(0, -1)}ies`;
    else verb = `${first}s`;
  }
  return [verb, ...rest].join(' ');
}

/** "我" in the user's own words becomes "用户" ("我妈妈" → "用户妈妈"); "我们" stays. */
function zhUser(text: string): string {
  return text.replace(/我(?!们)/gu, '用户');
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
