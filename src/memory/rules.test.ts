import { describe, expect, it } from 'vitest';
import { extractByRules, ruleSlot, RULES, RuleExtractor } from './rules.js';

/** One statement per rule, with the memory it must produce. */
const CASES: { rule: string; text: string; content: string; type: string }[] = [
  { rule: 'en.name', text: 'Hi there! My name is Alice Smith.', content: "The user's name is Alice Smith.", type: 'persona' },
  { rule: 'en.favorite', text: 'My favorite color is dark green.', content: "The user's favorite color is dark green.", type: 'persona' },
  { rule: 'en.dislike', text: "Honestly, I can't stand my commute.", content: "The user can't stand their commute.", type: 'persona' },
  { rule: 'en.preference', text: 'I really love hiking in the Alps, but the weather is bad.', content: 'The user loves hiking in the Alps.', type: 'persona' },
  { rule: 'en.job', text: 'I work as a pediatric nurse.', content: 'The user works as a pediatric nurse.', type: 'persona' },
  { rule: 'en.employer', text: 'These days I work at Acme Robotics.', content: 'The user works at Acme Robotics.', type: 'persona' },
  { rule: 'en.location', text: 'I live in Zurich with my partner.', content: 'The user lives in Zurich with their partner.', type: 'persona' },
  { rule: 'en.from-now-on', text: 'From now on, answer me in French.', content: 'From now on, answer the user in French.', type: 'instruction' },
  { rule: 'en.always-never', text: 'Never use emojis in your replies.', content: 'Never use emojis in your replies.', type: 'instruction' },
  { rule: 'en.habit', text: 'I usually go running before work.', content: 'The user usually goes running before work.', type: 'persona' },
  { rule: 'en.remember', text: "Remember that my sister's birthday is on May 3.", content: "The user's sister's birthday is on May 3.", type: 'episodic' },
  { rule: 'en.diet', text: "Yes, refugios please. I'm vegetarian, so the hut meals need to work for me.", content: 'The user is vegetarian.', type: 'persona' },
  { rule: 'en.allergy', text: 'I am severely allergic to peanuts.', content: 'The user is allergic to peanuts.', type: 'persona' },
  {
    rule: 'en.plan',
    text: "I'm planning a hiking trip to Patagonia in February with my sister Ana.",
    content: 'The user is planning a hiking trip to Patagonia in February with their sister Ana.',
    type: 'episodic',
  },
  {
    rule: 'en.remind',
    text: 'Remind me that the quarterly report for the Berlin office is due on March 3rd.',
    content: 'The quarterly report for the Berlin office is due on March 3rd.',
    type: 'episodic',
  },
  { rule: 'zh.plan', text: '下周三我要去上海见客户，帮我准备会议材料。', content: '用户下周三要去上海见客户', type: 'episodic' },
  { rule: 'zh.name', text: '你好，我叫小明。', content: '用户的名字是小明', type: 'persona' },
  { rule: 'zh.favorite', text: '我最喜欢的颜色是蓝色。', content: '用户最喜欢的颜色是蓝色', type: 'persona' },
  { rule: 'zh.dislike', text: '我特别讨厌香菜。', content: '用户特别讨厌香菜', type: 'persona' },
  { rule: 'zh.preference', text: '我很喜欢吃辣，尤其是火锅。', content: '用户很喜欢吃辣', type: 'persona' },
  { rule: 'zh.employer', text: '我在腾讯工作。', content: '用户在腾讯工作', type: 'persona' },
  { rule: 'zh.job', text: '我是一名软件工程师。', content: '用户的职业是软件工程师', type: 'persona' },
  { rule: 'zh.location', text: '我住在上海浦东。', content: '用户住在上海浦东', type: 'persona' },
  { rule: 'zh.from-now-on', text: '以后回答都用中文。', content: '从现在起，回答都用中文', type: 'instruction' },
  { rule: 'zh.always-never', text: '永远不要用表情符号。', content: '永远不要用表情符号', type: 'instruction' },
  { rule: 'zh.habit', text: '我每天早上六点起床。', content: '用户每天早上六点起床', type: 'persona' },
  { rule: 'zh.remember', text: '记住我对花生过敏。', content: '用户对花生过敏', type: 'persona' },
];

describe('rule extractor', () => {
  it('has a case for every rule', () => {
    expect(new Set(CASES.map((c) => c.rule))).toEqual(new Set(RULES.map((r) => r.id)));
  });

  for (const c of CASES) {
    it(`${c.rule}: ${c.text}`, () => {
      const hits = extractByRules(c.text);
      expect(hits.map((h) => ({ rule: h.rule, content: h.content, type: h.type }))).toContainEqual({ rule: c.rule, content: c.content, type: c.type });
    });
  }

  it('finds several statements in one message, each once', () => {
    const hits = extractByRules('I love jazz, but I hate crowded clubs. 我叫小红，我不喜欢咖啡。');
    expect(hits.map((h) => h.content)).toEqual(['The user loves jazz.', 'The user hates crowded clubs.', '用户的名字是小红', '用户不喜欢咖啡']);
  });

  it('ignores questions, bare pronouns, requests and hedged wishes', () => {
    for (const text of [
      'Do you know what I like?',
      'What is my name?',
      '你知道我叫什么吗？',
      '我喜欢什么呢',
      'I love it!',
      'I like that.',
      "I'd like a coffee please.",
      'I would love to go to Rome.',
      '我爱你。',
      '以后再说吧。',
      'Can you always double check?',
      "I'm not vegetarian.",
      "I'm planning what to say to him.",
      'Remind me tomorrow?',
    ]) {
      expect(extractByRules(text), text).toEqual([]);
    }
  });

  it('reads reminders to do something and allergies as the user would say them', () => {
    expect(extractByRules('Please remind me to renew my passport.').map((h) => [h.content, h.type])).toEqual([['Remind the user to renew their passport.', 'persona']]);
    expect(extractByRules("I'm a vegan and I'm lactose intolerant.").map((h) => h.content)).toEqual(['The user is vegan.', 'The user is lactose intolerant.']);
  });

  it('marks single-valued facts with a slot shared across languages', () => {
    expect(ruleSlot("The user's name is Alice.")).toBe('name');
    expect(ruleSlot('用户的名字是小明')).toBe('name');
    expect(ruleSlot('The user works at Acme.')).toBe('employer');
    expect(ruleSlot('用户在腾讯工作')).toBe('employer');
    expect(ruleSlot("The user's favorite color is blue.")).toBe('favorite:color');
    expect(ruleSlot('The user loves jazz.')).toBeNull();
  });

  it('extracts from user messages only, keeping the source id', async () => {
    const base = { scope: { userId: 'u', agentId: 'a' }, sessionKey: 's', recordedAt: '2024-01-01T00:00:00Z', timestamp: null, name: null };
    const memories = await new RuleExtractor().extract({
      messages: [
        { ...base, id: 'm1', seq: 1, role: 'assistant', content: 'My name is Cairn.' },
        { ...base, id: 'm2', seq: 2, role: 'user', content: 'My name is Bo.' },
      ],
      context: [],
    });
    expect(memories).toEqual([expect.objectContaining({ content: "The user's name is Bo.", sourceMessageIds: ['m2'], extractor: 'rules' })]);
  });
});
