/**
 * A realistic conversation corpus for the speed benches, built from real conversation text: the LoCoMo
 * dialogue turns (../shared/data/locomo, read at run time, never copied into the repository), split into
 * sentences and recombined into new messages, with the people's names, the places and the numbers varied
 * from seeded pools. Real text keeps what a synthetic Zipf corpus lacks: content words such as "really",
 * "love" or "trip" each sit in a few percent of all messages, and real questions hit them.
 *
 * The first messages of the first tenant (`u0`) are the original LoCoMo turns, verbatim and with ids
 * `<sample_id>:<dia_id>`, so the questions of `realisticQueries` have their gold evidence in the corpus.
 * Each tenant's stream depends only on the seed and the tenant's number, so a tenant of a many-tenant
 * corpus holds exactly the messages it holds alone (`scopes: 1`): the tenant test compares like with like.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prng } from './corpus.mjs';
import { sessionNumbers } from './locomo.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/**
 * Where the data lives: `$BENCH_LOCOMO_FILE`, else the shared data folder beside the repository (or beside
 * its parent, for a git worktree one level down).
 */
export const REALISTIC_SOURCE =
  process.env.BENCH_LOCOMO_FILE ??
  [resolve(REPO, '..', 'shared'), resolve(REPO, '..', '..', 'shared')].map((dir) => resolve(dir, 'data', 'locomo', 'locomo10.json')).find((file) => existsSync(file)) ??
  resolve(REPO, '..', 'shared', 'data', 'locomo', 'locomo10.json');

/** The agent every tenant of the corpus talks to; tenants differ by `user_id` (`u0`, `u1`, …). */
export const REALISTIC_AGENT = 'default';

// Names of people and pets in the LoCoMo dialogues (speakers, nicknames, pets), replaced per session.
const PEOPLE = `Melanie Mel Maria Tim Deborah Deb Jon John Caroline Caro Joanna Jo Evan Ev Dave Gina James Sam Audrey
  Jolene Calvin Cal Andrew Nate Anna Samantha Susie Frank Jill Josh Mark Patrick`.split(/\s+/);
const PETS = 'Toby Max Buddy Scout Daisy Luna Oliver Pepper Precious Pixie Tilly Jasper Ned'.split(/\s+/);
const PLACES = `Boston Tokyo Japan Canada Paris California Italy London Rome England Seattle Chicago Miami Toronto
  Liverpool Detroit Galway Banff Sweden Shinjuku`.split(/\s+/);

const NAME_POOL = `Aaron Abigail Adam Adrian Aisha Alan Alex Alice Amara Amir Amy Ana Andre Angela Anita Arjun Ava
  Beatriz Ben Bianca Boris Brian Bruno Camila Carla Carlos Chen Chloe Chris Clara Daniel Daria David Diego Dina
  Elena Eli Elif Emma Eric Esther Ethan Farah Felix Fiona Gabriel Grace Hana Hannah Hugo Ian Ines Isaac Ivan
  Jade Jamal Jana Jasmine Jonas Jorge Julia Kai Karim Kate Kenji Kira Laila Lars Laura Leo Lina Lucas Lucia
  Maya Mei Mia Mila Nadia Naomi Nina Noah Nora Omar Oscar Paula Pedro Priya Rafael Rania Rosa Ruth Sara Sofia
  Tara Theo Tomas Uma Vera Victor Wei Yara Yusuf Zara Zoe`.split(/\s+/);
const PET_POOL = 'Biscuit Coco Rex Milo Bella Charlie Rocky Nala Simba Ziggy Mochi Pickle Waffles Juno Pip Rolo'.split(/\s+/);
const PLACE_POOL = `Lisbon Oslo Denver Austin Berlin Madrid Dublin Vienna Prague Sydney Melbourne Portland Atlanta Phoenix
  Montreal Vancouver Barcelona Kyoto Seoul Lima Nairobi Cairo Athens Krakow Edinburgh Bristol Geneva Munich
  Hamburg Naples Florence Santiago Havana Marrakesh Reykjavik Helsinki Tallinn Budapest Zagreb Porto`.split(/\s+/);

/** A word from one of the lists, as a whole word (so "Cal" does not match "California"). */
const PERSON_RE = new RegExp(`\\b(${PEOPLE.join('|')})\\b`, 'g');
const PET_RE = new RegExp(`\\b(${PETS.join('|')})\\b`, 'g');
const PLACE_RE = new RegExp(`\\b(${PLACES.join('|')})\\b`, 'g');

let cached = null;

/** The LoCoMo samples, their turns in order (the text format of bench/locomo.mjs) and their sentences. */
function locomo() {
  if (cached !== null) return cached;
  const raw = JSON.parse(readFileSync(REALISTIC_SOURCE, 'utf8'));
  const originals = [];
  const sentences = [];
  const sentenceCounts = [];
  const questions = [];
  for (const sample of raw) {
    const conversation = sample.conversation;
    const sessions = sessionNumbers(conversation);
    const known = new Set();
    for (const n of sessions) {
      for (const turn of conversation[`session_${n}`]) {
        const caption = turn.blip_caption ? ` [shares ${turn.blip_caption}]` : '';
        known.add(turn.dia_id);
        originals.push({
          id: `${sample.sample_id}:${turn.dia_id}`,
          session_key: `${sample.sample_id}:session_${n}`,
          role: turn.speaker === conversation.speaker_a ? 'user' : 'assistant',
          content: `${turn.speaker}: ${turn.text}${caption}`,
        });
        const parts = String(turn.text)
          .split(/(?<=[.!?])\s+/)
          .map((s) => s.trim())
          .filter((s) => s.length > 0);
        sentences.push(...parts);
        sentenceCounts.push(Math.max(1, parts.length));
      }
    }
    for (const [index, qa] of sample.qa.entries()) {
      questions.push({
        qid: `${sample.sample_id}#${index}`,
        query: String(qa.question),
        category: String(qa.category),
        sample_id: sample.sample_id,
        evidence: normaliseEvidence(qa.evidence, known).map((id) => `${sample.sample_id}:${id}`),
      });
    }
  }
  cached = { originals, sentences, sentenceCounts, questions };
  return cached;
}

/** The `D<n>:<m>` ids of an evidence list that name a real turn (bench/locomo.mjs §3.1 step 4). */
function normaliseEvidence(evidence, known) {
  const ids = new Set();
  for (const entry of evidence ?? []) {
    for (const token of String(entry)
      .replace(/[()]/g, '')
      .split(/[;,\s]+/)) {
      const m = /^D(\d+):(\d+)$/.exec(token);
      if (m === null) continue;
      const id = `D${m[1]}:${Number(m[2])}`;
      if (known.has(id)) ids.add(id);
    }
  }
  return [...ids];
}

/**
 * One tenant's messages, lazily: first (tenant 0 only) the original LoCoMo turns, then recombined
 * messages in sessions of 10–40 turns. A message takes as many sentences as a random real turn has,
 * each sentence from anywhere in LoCoMo; people, pets and places are renamed consistently within a
 * session, and every number gets a random value of the same number of digits.
 */
function* tenantStream(tenant, seed) {
  const { originals, sentences, sentenceCounts } = locomo();
  const random = prng((seed * 1_000_003 + tenant * 7_919) >>> 0);
  const pick = (list) => list[Math.floor(random() * list.length)];
  const userId = `u${tenant}`;
  const start = Date.UTC(2024, 0, 1) + tenant * 3_600_000;
  let i = 0;
  const base = (id, sessionKey, role, content) => ({
    id,
    session_key: sessionKey,
    role,
    content,
    timestamp: new Date(start + i * 60_000).toISOString(),
    user_id: userId,
    agent_id: REALISTIC_AGENT,
  });
  if (tenant === 0) {
    for (const turn of originals) {
      yield base(turn.id, turn.session_key, turn.role, turn.content);
      i++;
    }
  }
  let session = 0;
  for (;;) {
    session++;
    const sessionKey = `${userId}:s${session}`;
    const speakers = [pick(NAME_POOL), pick(NAME_POOL)];
    const renames = new Map();
    const rename = (word, pool) => {
      if (!renames.has(word)) renames.set(word, pick(pool));
      return renames.get(word);
    };
    const turns = 10 + Math.floor(random() * 31);
    for (let turn = 0; turn < turns; turn++) {
      const count = pick(sentenceCounts);
      const parts = [];
      for (let s = 0; s < count; s++) parts.push(pick(sentences));
      const text = parts
        .join(' ')
        .replace(PERSON_RE, (w) => rename(w, NAME_POOL))
        .replace(PET_RE, (w) => rename(w, PET_POOL))
        .replace(PLACE_RE, (w) => rename(w, PLACE_POOL))
        .replace(/\d+/g, (digits) => varyNumber(digits, random));
      yield base(`${userId}-m${i}`, sessionKey, turn % 2 === 0 ? 'user' : 'assistant', `${speakers[turn % 2]}: ${text}`);
      i++;
    }
  }
}

/** A random number with as many digits as `digits`; years (19xx, 20xx) stay plausible years. */
function varyNumber(digits, random) {
  if (digits.length === 4 && /^(19|20)/.test(digits)) return String(1990 + Math.floor(random() * 36));
  if (digits.length === 1) return String(Math.floor(random() * 10));
  const low = 10 ** (digits.length - 1);
  return String(low + Math.floor(random() * (9 * low)));
}

/**
 * `count` messages `{ id, session_key, role, content, timestamp, user_id, agent_id }` spread evenly over
 * `scopes` tenants (`user_id` `u0`…`u<scopes-1>`, one agent), interleaved one message per tenant in turn
 * as a shared server would receive them. The same `seed` always gives the same corpus, and each tenant's
 * messages are the same whatever `scopes` and `count` (a smaller corpus holds a prefix of each tenant).
 * Throws when the LoCoMo file is missing.
 */
export function realisticMessages({ count, scopes = 1, seed = 42 }) {
  if (!Number.isInteger(count) || count < 0) throw new Error(`realisticMessages: count must be a whole number, got ${count}`);
  if (!Number.isInteger(scopes) || scopes < 1) throw new Error(`realisticMessages: scopes must be a positive whole number, got ${scopes}`);
  const streams = Array.from({ length: scopes }, (_, t) => tenantStream(t, seed));
  const messages = new Array(count);
  for (let i = 0; i < count; i++) messages[i] = streams[i % scopes].next().value;
  return messages;
}

/**
 * `n` real LoCoMo questions `{ qid, query, category, sample_id, evidence }` in a seeded order (cycling
 * when `n` exceeds the 1,986 questions). `evidence` lists the ids of the gold turns, which tenant `u0`
 * of `realisticMessages` holds verbatim; it is empty for the few questions without usable evidence.
 */
export function realisticQueries(n, seed = 7) {
  const { questions } = locomo();
  const order = questions.map((_, i) => i);
  const random = prng(seed);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return Array.from({ length: n }, (_, i) => questions[order[i % order.length]]);
}

/** How many original LoCoMo turns lead tenant `u0`'s stream (its first messages). */
export function realisticOriginalCount() {
  return locomo().originals.length;
}
