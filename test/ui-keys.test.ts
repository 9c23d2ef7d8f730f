import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, runCli, startServe, type ServeProcess } from './e2e-process.js';
import { expectAccessible, launchBrowser, screenshot } from './ui-browser.js';

// The dashboard of a `cairn serve` in keys mode, in a real Chromium: without a key it asks for one and
// shows nothing; a key is kept in the tab only (no cookie, not in the URL) and shows that key's tenant only.

let dir: string;
let server: ServeProcess;
let browser: Browser;
const tokens: Record<'alice' | 'bob', string> = { alice: '', bob: '' };

async function seed(token: string, memory: string, session: string): Promise<void> {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${server.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    expect(res.status, `${path}: ${await res.clone().text()}`).toBe(201);
  };
  await post('/v1/memories', { content: memory, type: 'persona' });
  await post('/v1/conversations', { session_key: session, messages: [{ role: 'user', content: `about ${memory}` }] });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-ui-keys-'));
  for (const user of ['alice', 'bob'] as const) {
    const created = runCli(['keys', 'create', '--user', user, '--agent', 'main', '--data', dir]);
    expect(created.code, created.stderr).toBe(0);
    tokens[user] = created.stdout.trim();
  }
  server = await startServe(['--port', String(await freePort()), '--data', dir], { CAIRN_AUTH_MODE: 'keys', CAIRN_PIPELINE_ENABLED: 'false' });
  await seed(tokens.alice, 'alice takes the night train', 'alice-trip');
  await seed(tokens.bob, 'bob flies to Oslo', 'bob-trip');
  browser = await launchBrowser();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function tab(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  return { context, page: await context.newPage() };
}

async function connect(page: Page, token: string): Promise<void> {
  await page.getByLabel('API key').fill(token);
  await page.getByRole('button', { name: 'Use this key' }).click();
}

describe('the dashboard in keys mode', { timeout: 120_000 }, () => {
  it('asks for a key and shows nothing without one; a wrong key is refused', async () => {
    const { context, page } = await tab();
    const res = await page.goto(`${server.url}/ui/memories`);
    expect(res?.status()).toBe(401);
    await page.getByRole('heading', { level: 1, name: 'Connect' }).waitFor();
    const text = await page.locator('body').innerText();
    expect(text).not.toContain('alice');
    expect(text).not.toContain('bob');
    await expectAccessible(page, 'keys connect');
    await screenshot(page, 'keys-connect');
    await connect(page, 'cairn_0000000000000000_notarealsecretnotarealsecretnotarealsecre');
    await page.locator('#flash', { hasText: 'invalid or revoked API key' }).waitFor();
    await page.getByRole('heading', { level: 1, name: 'Connect' }).waitFor();
    await context.close();
  });

  it('shows only the key’s tenant, keeps the key in the tab only, and lets it change data', async () => {
    const { context, page } = await tab();
    await page.goto(`${server.url}/ui/memories`);
    await connect(page, tokens.alice);
    await page.getByRole('heading', { level: 1, name: 'Memories' }).waitFor();
    await page.getByRole('link', { name: /alice takes the night train/ }).waitFor();
    expect(await page.locator('main').innerText()).not.toContain('bob');
    await expectAccessible(page, 'keys memories');
    await screenshot(page, 'keys-memories');

    await page.getByRole('link', { name: 'Conversations', exact: true }).click();
    await page.getByRole('link', { name: 'alice-trip' }).waitFor();
    expect(await page.getByRole('link', { name: 'bob-trip' }).count()).toBe(0);
    expect(page.url()).not.toContain('cairn_');
    expect(await context.cookies()).toEqual([]);
    expect(await page.evaluate<string | null>('sessionStorage.getItem("cairn.key")')).toBe(tokens.alice);

    // A change through the dashboard passes the origin guard (same origin) and lands in alice's scope.
    await page.getByRole('link', { name: 'Memories', exact: true }).click();
    await page.getByLabel('Content').fill('alice packs earplugs');
    await page.getByRole('button', { name: 'Remember' }).click();
    await page.getByRole('link', { name: /alice packs earplugs/ }).waitFor();
    const listed = await fetch(`${server.url}/v1/memories`, { headers: { authorization: `Bearer ${tokens.bob}` } });
    expect(JSON.stringify(await listed.json())).not.toContain('earplugs');

    // A reload keeps the key (this tab's sessionStorage); another browser profile is asked again.
    await page.reload();
    await page.getByRole('link', { name: /alice packs earplugs/ }).waitFor();
    const other = await tab();
    await other.page.goto(`${server.url}/ui/memories`);
    await other.page.getByRole('heading', { level: 1, name: 'Connect' }).waitFor();
    await other.context.close();

    await page.getByRole('button', { name: 'Forget key' }).click();
    await page.getByRole('heading', { level: 1, name: 'Connect' }).waitFor();
    expect(await page.evaluate<string | null>('sessionStorage.getItem("cairn.key")')).toBe(null);
    await context.close();
  });

  it('shows bob only bob’s data', async () => {
    const { context, page } = await tab();
    await page.goto(`${server.url}/ui`);
    await connect(page, tokens.bob);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await page.locator('main').innerText()).toContain('user bob');
    await page.getByRole('link', { name: 'Search', exact: true }).click();
    await page.getByLabel('Query').fill('night train Oslo');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.locator('#agent-text').waitFor();
    const answer = await page.locator('#agent-text').innerText();
    expect(answer).toContain('Oslo');
    expect(answer).not.toContain('night train');
    await context.close();
  });
});
