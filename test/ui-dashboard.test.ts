import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { freePort, startServe, type ServeProcess } from './e2e-process.js';
import { FIXTURES } from './fixtures/knowledge/harness.js';
import type { JsonBody } from './http-fixtures.js';
import { expectAccessible, launchBrowser, screenshot } from './ui-browser.js';

// The dashboard end to end in local mode: the built `cairn serve` (hash embeddings, so both retrieval
// paths run) with two real downstream MCP servers from test/fixtures, driven by a real Chromium. Every
// view is checked with axe-core and saved as a screenshot under test-output/screenshots/.

const fixture = fileURLToPath(new URL('./fixtures/tool-servers.mjs', import.meta.url));
let dir: string;
let weather: ChildProcessWithoutNullStreams;
let server: ServeProcess;
let browser: Browser;
let page: Page;

async function startWeather(port: number): Promise<string> {
  weather = spawn(process.execPath, [fixture, 'weather', String(port)]);
  return new Promise<string>((resolve, reject) => {
    let out = '';
    weather.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
    weather.once('exit', (code) => reject(new Error(`weather fixture exited with ${code}`)));
  });
}

async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<JsonBody> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(res.ok, `${method} ${path}: ${res.status}`).toBe(true);
  return (await res.json()) as JsonBody;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-ui-'));
  const config = join(dir, 'cairn.yaml');
  const weatherUrl = await startWeather(await freePort());
  writeFileSync(
    config,
    stringify({
      tools: {
        servers: [
          { name: 'notes', command: process.execPath, args: [fixture, 'notes'] },
          { name: 'weather', url: weatherUrl },
        ],
        startup_wait_ms: 60_000,
      },
      pipeline: { enabled: false },
    }),
  );
  server = await startServe(['--port', String(await freePort()), '--data', dir, '--config', config], { CAIRN_EMBEDDING_PROVIDER: 'hash' });
  // What agents leave behind, for the runs, errors, tools and knowledge views.
  await api('POST', '/v3/tools/call', { tool_name: 'notes__create_note', params: { title: 'pack the tent' } }, { 'x-cairn-session-key': 'camping' });
  await api('POST', '/v1/runs', { task_id: 't-1', session_key: 'camping', objective: 'plan the camping trip', reply: 'Packed.', ended_at: new Date().toISOString() });
  await api('POST', '/v1/errors', {
    tool_name: 'weather__get_forecast',
    keywords: ['forecast', 'timeout'],
    symptom: 'forecast timed out after 30 s',
    action: 'retry with days=1',
    outcome: 'resolved',
  });
  await api('POST', '/v1/memories', { content: 'Keeps bees on the roof of the garage', type: 'persona' });
  await api('POST', '/v1/conversations', { session_key: 'old-trip', messages: [{ role: 'user', content: 'book the ferry to Naxos' }] });
  const wiki = await api('POST', '/v1/knowledge', { type: 'wiki', path: FIXTURES.wiki, name: 'handbook' });
  for (let status = wiki.status; status !== 'ready'; status = (await api('GET', `/v1/knowledge/${wiki.id}`)).status) {
    expect(status).not.toBe('error');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  if (weather?.exitCode === null) weather.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** Waits for the view's heading, then checks accessibility and saves the screenshot. */
async function view(heading: string | RegExp, name: string): Promise<void> {
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  await expectAccessible(page, name);
  await screenshot(page, name);
}

/** The focused element: tag, `name` attribute and text (evaluated in the page, which has a DOM). */
async function focused(): Promise<{ tag: string; name: string | null; text: string }> {
  const script = '({ tag: document.activeElement.tagName, name: document.activeElement.getAttribute("name"), text: document.activeElement.textContent })';
  return page.evaluate<{ tag: string; name: string | null; text: string }>(script);
}

async function flash(text: string): Promise<void> {
  await page.locator('#flash', { hasText: text }).waitFor();
}

describe('the dashboard in a real browser', { timeout: 120_000 }, () => {
  it('shows the overview: counts, store, embedder, tool servers and knowledge', async () => {
    await page.goto(`${server.url}/ui`);
    await view('Overview', 'overview');
    const text = await page.locator('main').innerText();
    expect(text).toContain('sqlite');
    expect(text).toContain('hash');
    expect(await page.getByRole('row', { name: /weather connected/ }).count()).toBe(1);
    expect(await page.getByRole('row', { name: /handbook wiki ready/ }).count()).toBe(1);
  });

  it('captures a conversation, extracts memories, supersedes one and undoes it, and shows why it was remembered', async () => {
    await page.goto(`${server.url}/ui`);
    await page.getByRole('link', { name: 'Conversations', exact: true }).click();
    await view('Conversations', 'conversations');
    await page.getByLabel('Session', { exact: true }).fill('work');
    await page.getByLabel('Message').fill('I work at Acme.');
    await page.getByRole('button', { name: 'Capture' }).click();
    await view(/Session work/, 'session');
    expect(await page.getByRole('cell', { name: 'I work at Acme.' }).count()).toBe(1);
    await page.getByRole('button', { name: 'Extract memories now' }).click();
    await flash('Extraction finished.');
    await page.getByLabel('Message').fill('I work at Globex now.');
    await page.getByRole('button', { name: 'Capture' }).click();
    await page.getByRole('cell', { name: 'I work at Globex now.' }).waitFor();
    await page.getByRole('button', { name: 'Extract memories now' }).click();
    await flash('Extraction finished.');

    // Add one by hand, then look at the superseded one.
    await page.getByRole('link', { name: 'Memories', exact: true }).click();
    await view('Memories', 'memories');
    await page.getByLabel('Content').fill('Prefers green tea in the morning');
    await page.getByRole('button', { name: 'Remember' }).click();
    await flash('Memory stored.');
    await page.getByRole('link', { name: /Prefers green tea/ }).waitFor();
    expect(await page.getByRole('link', { name: /Acme/ }).count()).toBe(0);
    await page.getByLabel('Show superseded').check();
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('row', { name: /Acme.*superseded/ }).waitFor();
    await page.getByRole('link', { name: /Acme/ }).click();
    await view('Memory', 'memory-why');
    const why = await page.locator('main').innerText();
    expect(why).toContain('Extractor: rules');
    expect(await page.getByRole('cell', { name: 'I work at Acme.' }).count()).toBe(1);
    expect(await page.getByRole('row', { name: /supersede/ }).count()).toBeGreaterThan(0);
    await page.getByRole('button', { name: 'Undo the supersession' }).click();
    await flash('Supersession undone');
    await page.getByRole('row', { name: /State live/ }).waitFor();
    expect(await page.getByRole('row', { name: /restore/ }).count()).toBeGreaterThan(0);
    // The replacement is the superseded one now.
    await page.getByRole('link', { name: 'Memories', exact: true }).click();
    await page.getByRole('row', { name: /Acme.*live/ }).waitFor();
    expect(await page.getByRole('link', { name: /Globex/ }).count()).toBe(0);

    // Edit the hand-written one (a new version), then forget it after confirmation.
    await page.getByRole('link', { name: /Prefers green tea/ }).click();
    await page.getByRole('heading', { level: 1, name: 'Memory' }).waitFor();
    await page.getByLabel('Content').fill('Prefers jasmine tea in the morning');
    await page.getByRole('button', { name: 'Save' }).click();
    await flash('Memory saved');
    await page.getByRole('row', { name: /Version 2/ }).waitFor();
    expect(await page.getByRole('row', { name: /update.*1 → 2/ }).count()).toBe(1);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Forget this memory' }).click();
    await flash('Memory forgotten.');
    await page.getByRole('heading', { level: 1, name: 'Memories' }).waitFor();
    expect(await page.getByRole('link', { name: /jasmine/ }).count()).toBe(0);
  });

  it('runs memory_search in the playground and shows the strategy and each path’s rank', async () => {
    await page.goto(`${server.url}/ui`);
    await page.getByRole('link', { name: 'Search', exact: true }).click();
    await view('Search playground', 'search-empty');
    await page.getByLabel('Query').fill('bees roof');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.locator('#strategy').waitFor();
    expect(await page.locator('#strategy').innerText()).toBe('hybrid');
    const row = page.getByRole('row', { name: /Keeps bees/ });
    const cells = await row.getByRole('cell').allInnerTexts();
    expect(cells[0]).toBe('1');
    expect(cells[3]).toMatch(/^#1 \(/); // keyword rank
    expect(cells[4]).toMatch(/^#\d+ \(/); // vector rank
    expect(cells[5]).toContain('keyword');
    expect(await page.locator('#agent-text').innerText()).toContain('Keeps bees on the roof of the garage');
    expect(page.url()).toContain('query=bees+roof');
    await screenshot(page, 'search');
    await expectAccessible(page, 'search results');
  });

  it('previews the recall context with its token count', async () => {
    await page.goto(`${server.url}/ui/recall?session_key=old-trip&query=${encodeURIComponent('should I check on the bees?')}`);
    await view('Recall preview', 'recall');
    expect(await page.locator('#recall-context').innerText()).toContain('Keeps bees on the roof');
    expect(await page.locator('#recall-tokens').innerText()).toMatch(/^\d+ tokens$/);
  });

  it('shows the tool catalog and runs tool_search against the real downstream servers', async () => {
    await page.goto(`${server.url}/ui`);
    await page.getByRole('link', { name: 'Tools', exact: true }).click();
    await view('Tools', 'tools');
    expect(await page.getByRole('row', { name: /^weather connected 2/ }).count()).toBe(1);
    expect(await page.getByRole('row', { name: /^notes connected 6/ }).count()).toBe(1);
    expect(await page.locator('#tier').innerText()).toMatch(/^[012]$/);
    await page.getByLabel(/^Queries/).fill('weather forecast');
    await page.getByRole('button', { name: 'Search tools' }).click();
    const group = page.getByRole('region', { name: 'Group weather forecast' });
    await group.waitFor();
    const first = await group.getByRole('row').nth(1).getByRole('cell').allInnerTexts();
    expect(first[0]).toBe('weather__get_forecast');
    expect(['exact_name', 'keyword', 'semantic']).toContain(first[1]);
    await screenshot(page, 'tool-search');
    await expectAccessible(page, 'tool search results');
    await page.getByLabel('Session', { exact: true }).fill('camping');
    await page.getByRole('button', { name: 'Show calls' }).click();
    await page.getByRole('row', { name: /notes__create_note ok/ }).waitFor();
  });

  it('lists a session’s runs with their tool calls, and error records with hash, symptom and fix', async () => {
    await page.goto(`${server.url}/ui/runs?session_key=camping`);
    await view('Runs', 'runs');
    await page.getByRole('link', { name: 't-1' }).click();
    await page.getByRole('heading', { name: /Run t-1/ }).waitFor();
    expect(await page.locator('main').innerText()).toContain('plan the camping trip');
    await page.getByRole('link', { name: 'Errors', exact: true }).click();
    await view('Errors', 'errors-empty');
    await page.getByLabel('Keyword').fill('forecast timeout');
    await page.getByRole('button', { name: 'Find' }).click();
    const row = page.getByRole('row', { name: /weather__get_forecast/ });
    await row.waitFor();
    const cells = await row.getByRole('cell').allInnerTexts();
    expect(cells[0]).toMatch(/^[0-9a-f]{8}$/);
    expect(cells[2]).toBe('forecast timed out after 30 s');
    expect(cells[4]).toBe('retry with days=1');
    await screenshot(page, 'errors');
  });

  it('lists knowledge, syncs it, and shows a wiki page and its links', async () => {
    await page.goto(`${server.url}/ui`);
    await page.getByRole('link', { name: 'Knowledge', exact: true }).click();
    await view('Knowledge', 'knowledge');
    const files = (
      await page
        .getByRole('row', { name: /handbook/ })
        .getByRole('cell')
        .allInnerTexts()
    )[3];
    expect(Number(files)).toBeGreaterThan(3);
    await page.getByRole('button', { name: 'Sync handbook' }).click();
    await flash('Sync started.');
    await page.getByRole('link', { name: 'handbook' }).click();
    await view('handbook', 'knowledge-resource');
    await page.getByRole('link', { name: 'Team Handbook' }).first().click();
    await page.locator('#page-content').waitFor();
    expect(await page.locator('#page-content').innerText()).toContain('Welcome to the handbook');
    expect(await page.getByRole('heading', { name: /Link graph around this page/ }).count()).toBe(1);
    await screenshot(page, 'knowledge-page');
  });

  it('is driven by keyboard alone: skip link, navigation, a search form', async () => {
    await page.goto(`${server.url}/ui`);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.keyboard.press('Tab');
    expect((await focused()).text).toBe('Skip to content');
    const labels: string[] = [];
    for (let i = 0; i < 12 && !labels.includes('Search'); i++) {
      await page.keyboard.press('Tab');
      labels.push((await focused()).text);
    }
    expect(labels).toEqual(expect.arrayContaining(['Cairn', 'Overview', 'Conversations', 'Search']));
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Search playground' }).waitFor();
    // The view's heading takes focus, so the next Tab goes into the form.
    expect((await focused()).tag).toBe('H1');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect((await focused()).name).toBe('query');
    await page.keyboard.type('bees');
    await page.keyboard.press('Enter');
    await page.locator('#strategy').waitFor();
    expect(await page.locator('#agent-text').innerText()).toContain('Keeps bees');
  });

  it('deletes a session after confirmation', async () => {
    await page.goto(`${server.url}/ui/conversations/old-trip`);
    await view(/Session old-trip/, 'session-delete');
    let asked = '';
    page.once('dialog', (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.getByRole('button', { name: 'Delete this session' }).click();
    await flash('Session deleted.');
    expect(asked).toContain('Delete every message of session old-trip?');
    await page.getByRole('heading', { level: 1, name: 'Conversations' }).waitFor();
    expect(await page.getByRole('link', { name: 'old-trip', exact: true }).count()).toBe(0);
    const left = await api('GET', '/v1/conversations?session_key=old-trip');
    expect(left.messages).toEqual([]);
  });
});
