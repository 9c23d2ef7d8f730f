/**
 * A deterministic synthetic conversation corpus for the speed bench: a seeded PRNG, a vocabulary of
 * common English words followed by generated pseudo-words, word ranks drawn from a Zipf distribution,
 * messages of about 200 characters grouped in sessions of 10–40 turns.
 */

/** mulberry32: a small, fast 32-bit PRNG; the same seed always gives the same sequence in [0, 1). */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The head of the distribution is real English, so stop-word removal and stemming do real work.
const COMMON = `the to and of a i you it in that is was for we on my me this have with but so be just
  not are what do at all like they he she about get if one out your can there now know think really
  would her them when time going good some go well were had our did want how yeah make see right back
  today work home kids trip dinner weekend friends family music movie book coffee dog cat garden
  painting running hiking beach city house car school job meeting project doctor birthday plans
  recipe weather morning night week month year class team game store concert`.split(/\s+/);
const ONSETS = ['b', 'br', 'c', 'ch', 'd', 'f', 'g', 'gr', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'pl', 'r', 's', 'st', 't', 'tr', 'v', 'w', 'z'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'io', 'ou'];
const CODAS = ['', '', 'n', 'r', 's', 'l', 'm', 'nd', 'st', 'ck'];

/** `size` distinct lower-case words: the common English head, then pseudo-words of 2–4 syllables. */
export function vocabulary(size, random) {
  const words = [...new Set(COMMON)];
  const seen = new Set(words);
  while (words.length < size) {
    const syllables = 2 + Math.floor(random() * 3);
    let word = '';
    for (let i = 0; i < syllables; i++) word += pick(ONSETS, random) + pick(VOWELS, random) + (i === syllables - 1 ? pick(CODAS, random) : '');
    if (!seen.has(word)) {
      seen.add(word);
      words.push(word);
    }
  }
  return words;
}

/** A sampler of ranks 0..n-1 with P(rank r) ∝ 1 / (r + 1)^s. */
export function zipf(n, s, random) {
  const cdf = new Float64Array(n);
  let total = 0;
  for (let r = 0; r < n; r++) {
    total += 1 / (r + 1) ** s;
    cdf[r] = total;
  }
  return () => {
    const x = random() * total;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

/**
 * Generates `count` messages ({ id, sessionKey, role, content, timestamp }) for one scope. The same
 * `seed` always yields the same corpus, whatever the count (a shorter corpus is a prefix of a longer one).
 */
export function syntheticCorpus({ count, seed = 42, vocabularySize = 30_000 }) {
  const random = prng(seed);
  const words = vocabulary(vocabularySize, random);
  const rank = zipf(words.length, 1.05, random);
  const start = Date.UTC(2024, 0, 1);
  const messages = [];
  let session = 0;
  let left = 0;
  let turn = 0;
  for (let i = 0; i < count; i++) {
    if (left === 0) {
      session++;
      left = 10 + Math.floor(random() * 31);
      turn = 0;
    }
    const target = 120 + Math.floor(random() * 161);
    let content = '';
    while (content.length < target) {
      let word = words[rank()];
      if (content === '') word = word[0].toUpperCase() + word.slice(1);
      content += content === '' ? word : (random() < 0.08 ? ', ' : ' ') + word;
    }
    messages.push({
      id: `m${i}`,
      sessionKey: `s${session}`,
      role: turn % 2 === 0 ? 'user' : 'assistant',
      content: `${content}.`,
      timestamp: new Date(start + i * 60_000).toISOString(),
    });
    left--;
    turn++;
  }
  return { messages, words };
}

/**
 * `count` search queries over `words` (ordered by frequency rank), cycling through four shapes: common
 * words, rare words, a mix, and a natural question wrapped around a mix.
 */
export function syntheticQueries({ words, count, seed = 7 }) {
  const random = prng(seed);
  const common = () => words[100 + Math.floor(random() * 1_900)];
  const rare = () => words[5_000 + Math.floor(random() * (words.length - 5_000))];
  const shapes = [
    () => `${common()} ${common()}`,
    () => `${rare()} ${rare()}`,
    () => `${common()} ${rare()} ${rare()}`,
    () => `what did we say about the ${common()} and ${rare()} last ${common()}?`,
  ];
  return Array.from({ length: count }, (_, i) => shapes[i % shapes.length]());
}

function pick(list, random) {
  return list[Math.floor(random() * list.length)];
}
