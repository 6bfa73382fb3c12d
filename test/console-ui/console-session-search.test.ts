// Finding sessions in the web console's list, in Debian's chromium over the real stack: by text in their
// messages, by status, by when they started, and page by page (two a page) with Next and Previous, each page
// as the API's page token names it.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionClient } from '../../src/client/session-client.js';
import { startHarness, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { launchChromium, recordBrowserLog, screenshot } from './console-browser.js';
import { startConsoleUnderTest, type ConsoleUnderTest } from './console-under-test.js';

const NEEDLES = ['ui-find-1', 'ui-find-2', 'ui-find-3', 'ui-find-4', 'ui-find-5'];
const HAY = ['ui-hay-1', 'ui-hay-2'];
const CLOSED = 'ui-find-5';

/** `datetime-local` value for a moment `days` from now (local time, as the input takes it). */
function localInput(days: number): string {
  const d = new Date(Date.now() + days * 86_400_000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

describe('searching the session list in the web console', () => {
  let h: Harness;
  let ui: ConsoleUnderTest;
  let browser: Browser;
  let page: Page;
  const browserLog = join(mkdtempSync(join(tmpdir(), 'dh-console-search-')), 'browser.log');

  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'needle' }, text: 'found one', repeat: NEEDLES.length },
          { match: { lastUserContains: 'hay' }, text: 'nothing here', repeat: HAY.length },
        ],
      },
    });
    const sessions = new SessionClient(h.client, { taskQueue: h.taskQueue });
    for (const id of NEEDLES) await sessions.followup(id, `Is there a needle in ${id}?`, { start: true });
    for (const id of HAY) await sessions.followup(id, 'Only hay in this one.', { start: true });
    for (const id of [...NEEDLES, ...HAY]) await waitForTurnEnd(h.store, id, 1, 60_000);
    await sessions.close(CLOSED);
    await sessions.handle(CLOSED).result();
    ui = await startConsoleUnderTest(h);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    recordBrowserLog(page, browserLog);
    await page.goto(ui.url);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await ui?.stop();
    await h?.stop();
  });

  const list = () => page.getByRole('region', { name: 'Sessions', exact: true });
  /** The session ids the list shows now. */
  const shown = () =>
    list().getByRole('table', { name: 'Session list' }).locator('tbody a.session-link').allTextContents();
  const sorted = async () => (await shown()).sort();
  const next = () => list().getByRole('button', { name: 'Next page' });
  const previous = () => list().getByRole('button', { name: 'Previous page' });

  it('finds sessions by the text of their messages, case aside', async () => {
    await expect.poll(sorted, { timeout: 20_000 }).toEqual([...HAY, ...NEEDLES].sort());
    await list().getByLabel('Search').fill('NEEDLE');
    await expect.poll(sorted, { timeout: 20_000 }).toEqual(NEEDLES);
    await list().getByLabel('Search').fill('only hay');
    await expect.poll(sorted, { timeout: 20_000 }).toEqual(HAY);
    await list().getByLabel('Search').fill('no session says this');
    await list().getByText('No sessions.').waitFor({ timeout: 20_000 });
    expect(await shown()).toEqual([]);
  });

  it('pages through the matches two at a time, forward and back', async () => {
    await list().getByLabel('Search').fill('needle');
    await list().getByLabel('Per page').fill('2');
    await expect.poll(async () => (await shown()).length, { timeout: 20_000 }).toBe(2);
    const pages: string[][] = [];
    for (;;) {
      const number = pages.length + 1;
      await expect.poll(() => list().getByTestId('page-number').textContent()).toBe(`Page ${number}`);
      // The page's rows, once its answer is in (the previous page's rows are gone by then).
      await expect
        .poll(
          async () => {
            const ids = await shown();
            return ids.length > 0 && ids.every((id) => !pages.flat().includes(id));
          },
          { timeout: 20_000 },
        )
        .toBe(true);
      const ids = await shown();
      expect(ids.length).toBeLessThanOrEqual(2);
      pages.push(ids);
      if (await next().isDisabled()) break;
      expect(pages.length, 'more pages than matches').toBeLessThan(NEEDLES.length);
      await next().click();
    }
    expect(pages.flat().sort()).toEqual(NEEDLES);
    expect(pages.length).toBeGreaterThanOrEqual(3);
    await screenshot(page, 'console-search-last-page');

    // Back one page: the same sessions as before.
    await previous().click();
    await expect.poll(() => list().getByTestId('page-number').textContent()).toBe(`Page ${pages.length - 1}`);
    await expect.poll(sorted, { timeout: 20_000 }).toEqual([...(pages.at(-2) ?? [])].sort());
    // Back to the first page: Previous is off there.
    for (let number = pages.length - 1; number > 1; number--) {
      await previous().click();
      await expect.poll(() => list().getByTestId('page-number').textContent()).toBe(`Page ${number - 1}`);
    }
    expect(await previous().isDisabled()).toBe(true);
    await expect.poll(sorted, { timeout: 20_000 }).toEqual([...(pages[0] ?? [])].sort());
  });

  it('filters by status and by when a session started', async () => {
    await list().getByLabel('Per page').fill('50');
    await list().getByLabel('Search').fill('needle');
    await list().getByLabel('Status').selectOption('closed');
    await expect.poll(sorted, { timeout: 20_000 }).toEqual([CLOSED]);
    await list().getByLabel('Status').selectOption('idle');
    await expect.poll(sorted, { timeout: 20_000 }).toEqual(NEEDLES.filter((id) => id !== CLOSED));
    await list().getByLabel('Status').selectOption('');

    // Every session started today: none after tomorrow, all after yesterday; none before yesterday.
    await list().getByLabel('Started after').fill(localInput(1));
    await list().getByText('No sessions.').waitFor({ timeout: 20_000 });
    await list().getByLabel('Started after').fill(localInput(-1));
    await expect.poll(sorted, { timeout: 20_000 }).toEqual(NEEDLES);
    await list().getByLabel('Started before').fill(localInput(-1));
    await list().getByText('No sessions.').waitFor({ timeout: 20_000 });
  });
});
