// The console's layout in Debian's chromium over the real stack: from 1024 to 1920 px the list and the open
// session sit side by side with no box over another and nothing cut or spilling; below 900 px they stack, list
// first. Also folds a parent's subagents in the list.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionClient } from '../../src/client/session-client.js';
import { waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { docsScreenshot, launchChromium, recordBrowserLog, screenshot } from './console-browser.js';
import { startConsoleUnderTest, type ConsoleUnderTest } from './console-under-test.js';
import { runTour, startTourHarness, tourChild } from './tour-session.js';

const TOUR = 'ui-layout-tour';
const TOUR_CHILD = tourChild(TOUR);

// Code run in the page: this project's TypeScript has no DOM types, so the page's globals are declared loosely.
declare const document: any, scrollY: number, innerWidth: number;

/** A session whose id is longer than the list's column is wide at any of the widths. */
const LONG_ID = 'ui-layout-a-session-whose-identifier-is-much-longer-than-the-column';

interface Box {
  readonly name: string;
  readonly left: number;
  readonly top: number;
  readonly right: number;
  readonly bottom: number;
}

/** Two boxes overlap when they share more than a hairline in both directions (borders may touch). */
function overlap(a: Box, b: Box): boolean {
  const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
  const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
  return x > 0.5 && y > 0.5;
}

/** The page's main boxes, in page coordinates, and whether any text or box is cut or spills. */
async function measure(page: Page, sessionId: string) {
  return page.evaluate((id) => {
    const box = (name: string, el: any) => {
      if (el === null) throw new Error(`no ${name} on the page`);
      const r = el.getBoundingClientRect();
      return { name, left: r.left, top: r.top + scrollY, right: r.right, bottom: r.bottom + scrollY };
    };
    const list = document.querySelector('section[aria-label="Sessions"]');
    const table = list?.querySelector('table') ?? null;
    const headers = [...(table?.querySelectorAll('th') ?? [])];
    const costCells = [...document.querySelectorAll('table.cost-by-model th, table.cost-by-model td')];
    return {
      header: box('header', document.querySelector('header.top')),
      list: box('list', list),
      table: box('table', table),
      panel: box('panel', document.querySelector(`section[aria-label="Session ${id}"]`)),
      headers: headers.map((th) => box(`th ${th.textContent ?? ''}`, th)),
      // A header whose words do not fit its cell (the cut-off "Last activity").
      cutHeaders: headers.filter((th) => th.scrollWidth > th.clientWidth + 1).map((th) => th.textContent),
      // A figure of the cost by model cut to "$0.0…" beside the waterfall.
      cutCostCells: costCells.filter((c) => c.scrollWidth > c.clientWidth + 1).map((c) => c.textContent),
      pageWidth: document.documentElement.scrollWidth,
      viewportWidth: innerWidth,
    };
  }, sessionId);
}

describe('the console layout from 700 to 1920 px', () => {
  let h: Harness;
  let ui: ConsoleUnderTest;
  let browser: Browser;
  let page: Page;
  const browserLog = join(mkdtempSync(join(tmpdir(), 'dh-console-layout-')), 'browser.log');

  beforeAll(async () => {
    h = await startTourHarness([{ match: { lastUserContains: 'fill the list' }, text: 'filled' }]);
    await runTour(h, TOUR);
    const sessions = new SessionClient(h.client, { taskQueue: h.taskQueue });
    await sessions.followup(LONG_ID, 'fill the list', { start: true });
    await waitForTurnEnd(h.store, LONG_ID, 1, 60_000);
    ui = await startConsoleUnderTest(h);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    recordBrowserLog(page, browserLog);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await ui?.stop();
    await h?.stop();
  });

  /** Opens the tour at this viewport and waits until its list, conversation and metrics are drawn. */
  async function openAt(width: number, height = 900): Promise<void> {
    await page.setViewportSize({ width, height });
    await page.goto('about:blank');
    await page.goto(`${ui.url}#/sessions/${TOUR}`);
    const session = page.getByRole('region', { name: `Session ${TOUR}`, exact: true });
    await session.getByRole('article', { name: 'Turn 3 step 1', exact: true }).waitFor({ timeout: 20_000 });
    await session.getByRole('figure', { name: 'Step waterfall' }).waitFor();
    await page.getByRole('button', { name: LONG_ID, exact: true }).waitFor({ timeout: 20_000 });
    await page.getByRole('button', { name: TOUR_CHILD, exact: true }).waitFor({ timeout: 20_000 });
  }

  for (const width of [1024, 1400, 1920]) {
    it(`at ${width} px the list and the session sit side by side, no box over another`, async () => {
      await openAt(width);
      const m = await measure(page, TOUR);
      const pairs: [Box, Box][] = [
        [m.header, m.list],
        [m.header, m.panel],
        [m.list, m.panel],
        [m.table, m.panel],
      ];
      for (const [a, b] of pairs) expect(overlap(a, b), `${a.name} and ${b.name} overlap`).toBe(false);
      // Side by side: the list left of the session.
      expect(m.list.right).toBeLessThanOrEqual(m.panel.left);
      // The table stays inside the list's column, whatever the ids are.
      expect(m.table.left).toBeGreaterThanOrEqual(m.list.left - 0.5);
      expect(m.table.right).toBeLessThanOrEqual(m.list.right + 0.5);
      for (const [i, a] of m.headers.entries())
        for (const b of m.headers.slice(i + 1)) expect(overlap(a, b), `${a.name} and ${b.name} overlap`).toBe(false);
      for (const th of m.headers) expect(th.right).toBeLessThanOrEqual(m.table.right + 0.5);
      expect(m.cutHeaders).toEqual([]);
      expect(m.cutCostCells).toEqual([]);
      // Nothing makes the page scroll sideways.
      expect(m.pageWidth).toBeLessThanOrEqual(m.viewportWidth);
      // A cut id still says what it is.
      const long = page.getByRole('button', { name: LONG_ID, exact: true });
      expect(await long.getAttribute('title')).toBe(LONG_ID);
      await screenshot(page, `console-layout-${width}`);
    });
  }

  it('below 900 px the list stands above the session, both on screen width', async () => {
    await openAt(700);
    const m = await measure(page, TOUR);
    expect(overlap(m.list, m.panel)).toBe(false);
    expect(m.list.bottom).toBeLessThanOrEqual(m.panel.top);
    for (const b of [m.list, m.panel, m.table]) {
      expect(b.right - b.left, `${b.name} has no width`).toBeGreaterThan(300);
      expect(b.left).toBeGreaterThanOrEqual(0);
      expect(b.right).toBeLessThanOrEqual(m.viewportWidth);
    }
    expect(m.pageWidth).toBeLessThanOrEqual(m.viewportWidth);
    expect(m.cutHeaders).toEqual([]);
    expect(m.cutCostCells).toEqual([]);
    // The list is short enough that the session starts on the first screen.
    expect(m.panel.top).toBeLessThan(900);
    await docsScreenshot(page, 'console-narrow');
  });

  it("folds a parent's subagents in the list and unfolds them", async () => {
    await openAt(1400);
    const toggle = page.getByRole('button', { name: `Subagents of ${TOUR}`, exact: true });
    const child = page.getByRole('button', { name: TOUR_CHILD, exact: true });
    expect(await toggle.getAttribute('aria-expanded')).toBe('true');
    await toggle.click();
    await expect.poll(() => child.count()).toBe(0);
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    // Still folded after the list was polled again (twice: the first answer may have been on its way).
    for (let i = 0; i < 2; i++) await page.waitForResponse((r) => new URL(r.url()).pathname === '/api/sessions');
    expect(await child.count()).toBe(0);
    await toggle.click();
    await child.waitFor();
    expect(await toggle.getAttribute('aria-expanded')).toBe('true');
  });
});
