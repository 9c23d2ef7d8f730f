import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ToolIndex, toolSearchText, toolTokens, type IndexableTool } from './tool-index.js';

// Ports of the reference suite's tokenization, retrieval, relevance-floor and ranking tests
// (../shared/reference/hermes-tool-search.md §6.A 16-21, §6.B, §6.C), plus Cairn's additions.

const td = (name: string, description = '', properties: string[] = []): IndexableTool => ({
  name,
  description,
  inputSchema: { type: 'object', properties: Object.fromEntries(properties.map((p) => [p, { type: 'string' }])) },
});

const names = (tools: readonly IndexableTool[], index: ToolIndex, query: string, limit = 5) => index.search(query, limit).map((i) => tools[i]!.name);

const fakeCatalog = [
  td('github_create_issue', 'Open a new issue in a GitHub repository', ['title', 'body']),
  td('github_search_repos', 'Search GitHub for matching repositories', ['query']),
  td('slack_send_message', 'Post a message into a Slack channel', ['channel', 'text']),
  td('calendar_create_event', "Add an event to the user's calendar", ['title', 'start']),
];

const floorCatalog = [
  td('github_rerun_failed_workflow_run_jobs', 'Re-run failed jobs in a workflow run', ['run_id']),
  td('github_create_issue', 'Open a new issue in a GitHub repository', ['title', 'body']),
  td('github_list_issues', 'List issues in a repository', ['repo']),
  td('slack_send_message', 'Post a message into a Slack channel', ['channel', 'text']),
  td('gist_save_snippet', 'Save a shell command snippet as a gist', ['content']),
  td('codeql_scan', 'Scan code for vulnerabilities and execute analysis', ['repo']),
];

describe('tokenization and stemming', () => {
  it('stems the index and the query identically (Snowball English)', () => {
    expect(toolTokens('issues')).toEqual(toolTokens('issue'));
    expect(toolTokens('creating messages')).toEqual(toolTokens('create message'));
    expect(toolTokens('issues creating')).toEqual(['issu', 'creat']);
  });

  it('splits on _ . : - and punctuation, lower-cases, keeps digits inside words and keeps stop words', () => {
    expect(toolTokens('github.create-issue:v2')).toEqual(['github', 'creat', 'issu', 'v2']);
    expect(toolTokens('Create a GitHub issue!')).toEqual(['creat', 'a', 'github', 'issu']);
  });

  it('drops a leading mcp__ from names and adds the source label only when the name lacks it', () => {
    expect(toolSearchText({ name: 'mcp__github__create_issue', description: '' })).toBe('github  create issue');
    expect(toolSearchText({ name: 'mcp_github_create_issue', description: '' })).toBe('mcp github create issue');
    expect(toolSearchText({ name: 'create_record', description: 'x', source: 'linear' })).toBe('create record linear x');
    expect(toolSearchText({ name: 'linear__create_record', description: 'x', source: 'linear' })).toBe('linear  create record x');
  });

  it('splits camelCase names (Cairn addition; off reproduces the reference)', () => {
    expect(toolSearchText({ name: 'getUserProfile', description: '' })).toBe('get User Profile');
    expect(toolSearchText({ name: 'parseHTMLPage', description: '' })).toBe('parse HTML Page');
    expect(toolSearchText({ name: 'getUserProfile', description: '' }, { camelCase: false })).toBe('getUserProfile');
  });

  it('indexes parameter names, and parameter descriptions unless turned off', () => {
    const tool = { name: 't', description: 'd', inputSchema: { properties: { city: { type: 'string', description: 'Name of the town' } } } };
    expect(toolSearchText(tool)).toBe('t d city Name of the town');
    expect(toolSearchText(tool, { paramDescriptions: false })).toBe('t d city');
    expect(toolSearchText({ name: 't', description: 'd', inputSchema: 'not a schema' })).toBe('t d');
  });

  it('segments Chinese with jieba instead of dropping it (Cairn addition), and drops it when cjk is off', () => {
    const tokens = toolTokens('查询天气预报');
    expect(tokens).toContain('天气');
    expect(tokens).toContain('预报');
    expect(toolTokens('查询天气预报', { cjk: false })).toEqual([]);
    const tools = [td('weather_forecast', '查询城市的天气预报'), td('send_mail', '发送电子邮件')];
    expect(names(tools, new ToolIndex(tools), '天气预报')).toEqual(['weather_forecast']);
    expect(names(tools, new ToolIndex(tools, { cjk: false }), '天气预报')).toEqual([]);
  });

  it('folds diacritics, so accented and plain spellings meet', () => {
    expect(toolTokens('Café')).toEqual(toolTokens('cafe'));
  });

  it('is deterministic: the same text always gives the same tokens (property)', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const a = toolTokens(text);
        expect(toolTokens(text)).toEqual(a);
        for (const t of a) expect(t).toBe(t.toLowerCase());
      }),
    );
  });
});

describe('retrieval', () => {
  const index = new ToolIndex(fakeCatalog);

  it('finds the relevant tool first', () => {
    expect(names(fakeCatalog, index, 'create a github issue', 3)[0]).toBe('github_create_issue');
  });

  it('respects the limit', () => {
    expect(index.search('github', 1).length).toBeLessThanOrEqual(1);
    expect(index.search('github', 0)).toEqual([]);
  });

  it('returns nothing for words no tool contains', () => {
    expect(index.search('asdf qwerty foobar', 5)).toEqual([]);
  });

  it('finds a tool by one word of its name', () => {
    expect(names(fakeCatalog, index, 'calendar')).toContain('calendar_create_event');
  });

  it('a plural query finds singular tool names', () => {
    const tools = [
      td('mq_linear_create_issue', 'Create a new issue in a team.'),
      td('mq_linear_list_issues', 'List issues in the workspace.'),
      td('mq_slack_post_message', 'Post a message to a channel.'),
    ];
    expect(names(tools, new ToolIndex(tools), 'issues')).toEqual(expect.arrayContaining(['mq_linear_create_issue', 'mq_linear_list_issues']));
  });

  it('admits only tools holding the rarest query token: a shared common word is not enough', () => {
    const tools = [
      td('incident_create', 'Create an incident and email the on-call team'),
      td('incident_escalate', 'Escalate an incident by email'),
      td('gmail_send_email', 'Send an email from Gmail'),
    ];
    const idx = new ToolIndex(tools);
    expect(names(tools, idx, 'send gmail email')).toEqual(['gmail_send_email']);
    // A word no tool has gates the query: nothing, not a list sharing "email".
    expect(names(tools, idx, 'send outlook email')).toEqual([]);
  });

  it('gates on the earliest of equally rare tokens', () => {
    const tools = [td('alpha_tool', 'zebra'), td('beta_tool', 'yak')];
    const idx = new ToolIndex(tools);
    // zebra and yak are each in one tool: zebra comes first in the query and gates.
    expect(names(tools, idx, 'zebra yak')).toEqual(['alpha_tool']);
    expect(names(tools, idx, 'yak zebra')).toEqual(['beta_tool']);
  });

  it('keeps catalog order on equal scores (stable)', () => {
    const tools = [td('one_tool', 'shared words here'), td('two_tool', 'shared words here'), td('three_tool', 'shared words here')];
    expect(names(tools, new ToolIndex(tools), 'shared')).toEqual(['one_tool', 'two_tool', 'three_tool']);
  });

  it('ranks admitted tools by BM25: on equal matches the shorter tool text wins', () => {
    const tools = [td('notes_search', 'Search and list notes by keyword in their title'), td('notes_list', 'List notes')];
    expect(names(tools, new ToolIndex(tools), 'list notes')).toEqual(['notes_list', 'notes_search']);
  });

  it('gives the same answers on every repetition', () => {
    const tools = [
      td('mq_linear_create_issue', 'Create a new issue in a team.'),
      td('mq_slack_post_message', 'Post a message to a channel.'),
      td('calendar_meetings', 'List meetings'),
    ];
    const idx = new ToolIndex(tools);
    const first = ['issues', 'post slack message', 'meetings'].map((q) => idx.search(q, 5));
    for (let i = 0; i < 20; i++) expect(['issues', 'post slack message', 'meetings'].map((q) => idx.search(q, 5))).toEqual(first);
  });

  it('rank admission orders every tool sharing a scored term', () => {
    const tools = [td('weather_get', 'Get the weather forecast'), td('news_get', 'Get the latest news')];
    const idx = new ToolIndex(tools);
    expect(idx.search('latest weather for paris', 5, 'strict')).toEqual([]);
    expect(idx.search('latest weather for paris', 5, 'rank').map((i) => tools[i]!.name)).toEqual(['weather_get', 'news_get']);
  });
});

describe('relevance floor', () => {
  const index = new ToolIndex(floorCatalog);

  it('filters a tool that shares only one incidental word with a long query (reference rule)', () => {
    expect(index.search('run shell command execute code', 5, 'strict')).toEqual([]);
  });

  it('leaves short queries untouched', () => {
    expect(names(floorCatalog, index, 'list issues')).toContain('github_list_issues');
    expect(names(floorCatalog, index, 'send message')).toContain('slack_send_message');
  });

  it('lets a long query with real coverage match', () => {
    const found = names(floorCatalog, index, 'create issue github repository title');
    expect(found[0]).toBe('github_create_issue');
    expect(found).not.toContain('github_rerun_failed_workflow_run_jobs');
  });

  it('an exact tool name bypasses the floor and the gate', () => {
    expect(names(floorCatalog, index, 'github_create_issue')[0]).toBe('github_create_issue');
    expect(names(floorCatalog, index, '  GITHUB_CREATE_ISSUE ')[0]).toBe('github_create_issue');
  });
});

describe('served admission (tool_search)', () => {
  // Twelve tools in which create, list, file and text are common words and the services are distinct.
  const catalog = [
    td('github__create_issue', 'Open a new issue in a GitHub repository', ['title', 'body']),
    td('github__list_issues', 'List the issues of a GitHub repository', ['repo']),
    td('slack__send_message', 'Post a message into a Slack channel', ['channel', 'text']),
    td('docs__pdf_to_text', 'Extract the plain text of a PDF document', ['path']),
    td('docs__summarize', 'Summarize a long text into a few sentences', ['text']),
    td('files__create_directory', 'Create a directory', ['path']),
    td('files__write_file', 'Write text to a file, creating the file when missing', ['path', 'content']),
    td('files__read_file', 'Read a file', ['path']),
    td('files__list_directory', 'List the entries of a directory', ['path']),
    td('calendar__create_event', 'Create a calendar event', ['title', 'start']),
    td('calendar__list_events', 'List calendar events in a time range', ['from', 'to']),
    td('weather__forecast', '查询城市未来几天的天气预报', ['city']),
  ];
  const index = new ToolIndex(catalog);
  const served = (query: string, limit = 5) => index.scored(query, limit).map((h) => ({ name: catalog[h.index]!.name, match: h.match }));

  it('a missing capability answers nothing: a keyword query whose rarest word no tool holds, or a request sharing no content word', () => {
    expect(served('send gmail email')).toEqual([]);
    expect(served('could you please book me a flight to Paris next friday')).toEqual([]);
  });

  it('a natural-language intent gets its tools, fillers and British spelling included', () => {
    const found = served('I need to turn this PDF into text and summarise it').map((m) => m.name);
    expect(found.slice(0, 2).sort()).toEqual(['docs__pdf_to_text', 'docs__summarize']);
    expect(served('can you help me open a new issue on github')[0]).toEqual({ name: 'github__create_issue', match: 'keyword' });
  });

  it('one incidental common word is not a match', () => {
    // "create" is in four of twelve tools: not distinctive, and the request shares nothing else.
    expect(served('create a quarterly budget spreadsheet for the marketing team')).toEqual([]);
    expect(index.search('create a quarterly budget spreadsheet for the marketing team', 5, 'rank').length).toBeGreaterThan(0);
  });

  it('an exact name comes first and says so; other matches are keyword ones', () => {
    const found = served('files__read_file');
    expect(found[0]).toEqual({ name: 'files__read_file', match: 'exact_name' });
    expect(found.slice(1).every((m) => m.match === 'keyword')).toBe(true);
  });

  it('a Chinese request finds the tool described in Chinese', () => {
    expect(served('帮我查一下北京明天的天气预报')[0]).toEqual({ name: 'weather__forecast', match: 'keyword' });
  });

  it('excluded tools are left out of the answer and of the word statistics', () => {
    const pdf = catalog.findIndex((t) => t.name === 'docs__pdf_to_text');
    expect(index.search('pdf document', 5).map((i) => catalog[i]!.name)).toEqual(['docs__pdf_to_text']);
    // Without the one tool that holds "pdf", the keyword query names a capability no tool has.
    expect(index.scored('pdf document', 5, 'served', { exclude: new Set([pdf]) })).toEqual([]);
    expect(index.scored('extract plain text', 5, 'rank', { exclude: new Set([pdf]) }).map((h) => h.index)).not.toContain(pdf);
  });
});

describe('exact names', () => {
  it('beat longer siblings that share every word', () => {
    const tools = [
      td('github_create_issue_comment', 'Comment on a GitHub issue with a long explanation of the comment body'),
      td('github_create_issue_label', 'Label a GitHub issue'),
      td('github_create_issue', 'Create a GitHub issue in a repository, with title, body, assignees, labels and milestone settings'),
    ];
    expect(names(tools, new ToolIndex(tools), 'github_create_issue', 1)).toEqual(['github_create_issue']);
  });

  it('beat prefixed names of a short name', () => {
    const tools = [td('list_x', 'list things'), td('list_all_the_open_items', 'list items'), td('list', 'a list')];
    expect(names(tools, new ToolIndex(tools), 'list', 1)).toEqual(['list']);
  });

  it('match even when the name carries a prefix the index drops', () => {
    const tools = [td('mcp__linear__get_issue', 'Get an issue'), td('other_tool', 'other')];
    expect(names(tools, new ToolIndex(tools), 'mcp__linear__get_issue', 1)).toEqual(['mcp__linear__get_issue']);
  });
});

describe('properties', () => {
  const words = ['create', 'issue', 'github', 'send', 'message', 'slack', 'list', 'event', 'calendar', 'zzz'];
  const tool = fc.record({
    name: fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 3 }).map((w) => w.join('_')),
    description: fc.array(fc.constantFrom(...words), { maxLength: 6 }).map((w) => w.join(' ')),
  });

  it('every strict hit holds the rarest query token (or is an exact name), and results never exceed the limit', () => {
    fc.assert(
      fc.property(fc.array(tool, { maxLength: 12 }), fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 5 }), fc.integer({ min: 1, max: 6 }), (tools, q, limit) => {
        const index = new ToolIndex(tools);
        const query = q.join(' ');
        const hits = index.search(query, limit, 'strict');
        expect(hits.length).toBeLessThanOrEqual(limit);
        const terms = index.tokens(query);
        let gate = terms[0]!;
        for (const t of terms) if (index.idf(t) > index.idf(gate)) gate = t;
        for (const i of hits) {
          const t = tools[i]!;
          const exact = t.name.toLowerCase() === query.trim().toLowerCase();
          expect(exact || toolTokens(toolSearchText(t)).includes(gate)).toBe(true);
        }
        expect(new Set(hits).size).toBe(hits.length);
      }),
    );
  });

  it('a small limit returns exactly the head of the full ranking, ties in catalog order', () => {
    fc.assert(
      fc.property(
        fc.array(tool, { minLength: 1, maxLength: 30 }),
        fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: 4 }),
        (tools, q, limit) => {
          const index = new ToolIndex(tools);
          const query = q.join(' ');
          for (const admission of ['strict', 'rank'] as const) {
            expect(index.search(query, limit, admission)).toEqual(index.search(query, tools.length, admission).slice(0, limit));
          }
        },
      ),
    );
  });
});
