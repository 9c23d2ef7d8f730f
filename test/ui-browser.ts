import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';

/** Where the browser tests leave their screenshots (git-ignored). */
export const SCREENSHOTS = join(import.meta.dirname, '..', 'test-output', 'screenshots');

const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

function findChromium(): string | undefined {
  return CANDIDATES.find((path): path is string => path !== undefined && path !== '' && existsSync(path));
}

/**
 * The Chromium binary for the browser tests: Debian's `chromium` package, installed with apt-get when it
 * is missing (a fresh CI image runs the tests as root with apt reachable). Never skipped: without a
 * browser the tests fail, naming what to install.
 */
export function ensureChromium(): string {
  const found = findChromium();
  if (found) return found;
  // Test files run in parallel: flock lets one install while the others wait for it.
  const script = '[ -x /usr/bin/chromium ] || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium)';
  const install = spawnSync('flock', [join(tmpdir(), 'cairn-chromium-install.lock'), 'sh', '-c', script], { stdio: 'inherit' });
  const installed = findChromium();
  if (!installed)
    throw new Error(
      `no Chromium found (${CANDIDATES.filter(Boolean).join(', ')}) and apt-get install chromium failed (exit ${install.status}); install Debian's chromium package or set CHROMIUM_PATH`,
    );
  return installed;
}

/** A headless Chromium; `--no-sandbox` because CI runs the tests as root. */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: ensureChromium(), headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

/** Saves a full-page screenshot as `test-output/screenshots/<name>.png`. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Runs axe-core on the page as it is now; fails on any critical or serious violation, naming each. */
export async function expectAccessible(page: Page, view: string): Promise<void> {
  const { violations } = await new AxeBuilder({ page }).analyze();
  const grave = violations.filter((v) => v.impact === 'critical' || v.impact === 'serious');
  expect(
    grave.map(
      (v) =>
        `${v.impact} ${v.id}: ${v.help} (${v.nodes
          .map((n) => n.target.join(' '))
          .slice(0, 3)
          .join('; ')})`,
    ),
    `axe on ${view}`,
  ).toEqual([]);
}
