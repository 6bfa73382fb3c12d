// The console's layout in Debian's chromium over the real stack, at a desk (1440×900) and on a phone (390×844):
// on every screen (the session list, a session's conversation, a step's request and diff, an eval run) nothing
// scrolls sideways, spills, runs into other text or is cut without a tooltip (layout-problems.ts), and the docs'
// screenshots are taken from these screens. Also: side by side from 1024 to 1920 px, stacked on a phone, and a
// parent's subagents fold in the list.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionClient } from '../../src/client/session-client.js';
import { planEvalTargets } from '../../src/eval/plan-eval.js';
import { evalWorkflowId, type EvalRunInput } from '../../src/shared/eval-contracts.js';
import { startEvalWorker, type EvalWorker } from '../helpers/eval-worker.js';
import { TEST_MODEL_2, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { docsScreenshot, launchChromium, recordBrowserLog, screenshot } from './console-browser.js';
import { startConsoleUnderTest, type ConsoleUnderTest } from './console-under-test.js';
import { layoutProblems } from './layout-problems.js';
import { runTour, startTourHarness, TOUR_PRICE, tourChild } from './tour-session.js';

const TOUR = 'ui-layout-tour';
const TOUR_CHILD = tourChild(TOUR);
const EVAL_RUN = 'ui-layout-run';

// Code run in the page: this project's TypeScript has no DOM types, so the page's globals are declared loosely.
declare const document: any, scrollY: number;

/** A session whose id is longer than the list's column is wide at any of the widths. */
const LONG_ID = 'ui-layout-a-session-whose-identifier-is-much-longer-than-the-column';

const SIZES = [
  { size: 'desk', width: 1440, height: 900 },
  { size: 'phone', width: 390, height: 844 },
] as const;
type Size = (typeof SIZES)[number]['size'];
const SCREENS = ['list', 'conversation', 'step', 'eval'] as const;
type Screen = (typeof SCREENS)[number];

/** The docs' screenshots of each screen at each size: the element each starts at (scrolled to the top), and its name. */
const DOCS_IMAGES: Record<Size, Partial<Record<Screen, readonly (readonly [string, string])[]>>> = {
  desk: {
    conversation: [
      [`section[aria-label="Session ${TOUR}"] article[data-step="1.1"]`, 'console-timeline'],
      ['figure[aria-label="Step waterfall"]', 'console-waterfall'],
    ],
    step: [['section[aria-label="Request of turn 2 step 1"]', 'console-step']],
    eval: [[`section[aria-label="Eval run ${EVAL_RUN}"]`, 'console-eval']],
  },
  phone: {
    list: [['main', 'console-phone-list']],
    conversation: [[`section[aria-label="Session ${TOUR}"]`, 'console-phone-session']],
    step: [['section[aria-label="Request of turn 2 step 1"]', 'console-phone-step']],
    eval: [[`section[aria-label="Eval run ${EVAL_RUN}"]`, 'console-phone-eval']],
  },
};

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

/** The page's main boxes, in page coordinates. */
async function regions(page: Page, sessionId: string) {
  return page.evaluate((id) => {
    const box = (name: string, el: any) => {
      if (el === null) throw new Error(`no ${name} on the page`);
      const r = el.getBoundingClientRect();
      return { name, left: r.left, top: r.top + scrollY, right: r.right, bottom: r.bottom + scrollY };
    };
    const list = document.querySelector('section[aria-label="Sessions"]');
    return {
      header: box('header', document.querySelector('header.top')),
      list: box('list', list),
      table: box('table', list?.querySelector('table') ?? null),
      panel: box('panel', document.querySelector(`section[aria-label="Session ${id}"]`)),
    };
  }, sessionId);
}

describe('the console layout at a desk and on a phone', () => {
  let h: Harness;
  let worker: EvalWorker;
  let ui: ConsoleUnderTest;
  let browser: Browser;
  let page: Page;
  const browserLog = join(mkdtempSync(join(tmpdir(), 'dh-console-layout-')), 'browser.log');
  let errors: string[] = [];

  beforeAll(async () => {
    h = await startTourHarness([{ match: { lastUserContains: 'fill the list' }, text: 'filled' }]);
    await runTour(h, TOUR);
    const sessions = new SessionClient(h.client, { taskQueue: h.taskQueue });
    await sessions.followup(LONG_ID, 'fill the list', { start: true });
    await waitForTurnEnd(h.store, LONG_ID, 1, 60_000);
    // An eval of the long-named session's step: the candidate calls a tool where the recorded answer was text.
    worker = await startEvalWorker({
      store: h.store,
      script: { replies: [{ toolCalls: [{ id: 'n1', name: 'echo', arguments: { text: 'Lyon' } }] }] },
      fleet: { pricing: { [`scripted/${TEST_MODEL_2}`]: TOUR_PRICE } },
    });
    const { targets } = await planEvalTargets((id) => h.store.read(id), [LONG_ID], { runId: EVAL_RUN, at: 'step' });
    const run = await h.client.workflow.start('evalRun', {
      taskQueue: worker.taskQueue,
      workflowId: evalWorkflowId(EVAL_RUN),
      args: [
        {
          runId: EVAL_RUN,
          change: { model: TEST_MODEL_2 },
          targets,
          concurrency: 1,
          at: Date.now(),
        } satisfies EvalRunInput,
      ],
    });
    await run.result();
    ui = await startConsoleUnderTest(h);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    errors = recordBrowserLog(page, browserLog);
  }, 240_000);
  afterAll(async () => {
    await browser?.close();
    await ui?.stop();
    await worker?.stop();
    await h?.stop();
  });

  const list = () => page.getByRole('region', { name: 'Sessions', exact: true });
  const session = () => page.getByRole('region', { name: `Session ${TOUR}`, exact: true });
  /** A session's entry in the list (by its text: the entry's role is the subject of another test). */
  const entry = (id: string) => list().locator('tbody').getByText(id, { exact: true });

  /** A fresh document at this size and address (a hash-only goto would keep the page as it was). */
  async function load(width: number, height: number, hash: string): Promise<void> {
    await page.setViewportSize({ width, height });
    await page.goto('about:blank');
    await page.goto(`${ui.url}${hash}`);
    await entry(LONG_ID).waitFor({ timeout: 20_000 });
    await entry(TOUR_CHILD).waitFor({ timeout: 20_000 });
  }

  /** Opens a screen and waits until all of it is drawn. */
  async function open(screen: Screen, width: number, height: number): Promise<void> {
    switch (screen) {
      case 'list':
        await load(width, height, '#/');
        return;
      case 'conversation': {
        await load(width, height, `#/sessions/${TOUR}`);
        const step = session().getByRole('article', { name: 'Turn 1 step 1', exact: true });
        await session().getByRole('article', { name: 'Turn 3 step 1', exact: true }).waitFor({ timeout: 20_000 });
        await session().getByRole('figure', { name: 'Step waterfall' }).waitFor();
        await session().getByRole('table', { name: 'Cost by model' }).waitFor();
        // The approved call opened on its verdict and approval, as a reader would look at it.
        const shout = step.getByRole('group', { name: 'Tool call shout (s1)', exact: true });
        await shout.locator('summary').click();
        await shout.getByTestId('tool-output').waitFor();
        return;
      }
      case 'step': {
        await load(width, height, `#/sessions/${TOUR}/steps/2/1`);
        const request = session().getByRole('region', { name: 'Request of turn 2 step 1' });
        await request.getByText('Digest verified').waitFor({ timeout: 20_000 });
        return;
      }
      case 'eval': {
        await load(width, height, '#/');
        await page.getByLabel('Eval run', { exact: true }).fill(EVAL_RUN);
        await page.getByRole('button', { name: 'Show eval' }).click();
        const region = page.getByRole('region', { name: `Eval run ${EVAL_RUN}` });
        const rows = region.getByRole('table', { name: 'Eval steps' }).getByRole('row');
        await expect.poll(() => rows.count(), { timeout: 20_000 }).toBe(2); // header + 1 step
        await rows.nth(1).getByRole('button').first().click();
        const step = region.getByRole('region', { name: `Eval of ${LONG_ID} step 1.1` });
        await step.getByRole('table', { name: 'Tool call diff' }).waitFor();
        await step.getByRole('button', { name: 'The request both saw' }).click();
        await step.getByRole('region', { name: 'Request of turn 1 step 1' }).getByText('Digest verified').waitFor();
        return;
      }
    }
  }

  for (const { size, width, height } of SIZES) {
    for (const screen of SCREENS) {
      it(`${screen} at ${width}×${height}: nothing scrolls sideways, spills, overlaps or is cut`, async () => {
        await open(screen, width, height);
        await screenshot(page, `console-layout-${size}-${screen}`);
        expect(await layoutProblems(page)).toEqual([]);
        for (const [start, image] of DOCS_IMAGES[size][screen] ?? []) {
          await page.locator(start).evaluate((el: any) => el.scrollIntoView({ block: 'start' }));
          await docsScreenshot(page, image);
        }
        expect(errors).toEqual([]);
      }, 60_000);
    }
  }

  for (const width of [1024, 1440, 1920]) {
    it(`at ${width} px the list and the session sit side by side, no box over another`, async () => {
      await open('conversation', width, 900);
      const m = await regions(page, TOUR);
      const pairs: [Box, Box][] = [
        [m.header, m.list],
        [m.header, m.panel],
        [m.list, m.panel],
        [m.table, m.panel],
      ];
      for (const [a, b] of pairs) expect(overlap(a, b), `${a.name} and ${b.name} overlap`).toBe(false);
      // Side by side: the list left of the session, its table inside its column whatever the ids are.
      expect(m.list.right).toBeLessThanOrEqual(m.panel.left);
      expect(m.table.left).toBeGreaterThanOrEqual(m.list.left - 0.5);
      expect(m.table.right).toBeLessThanOrEqual(m.list.right + 0.5);
      expect(await layoutProblems(page)).toEqual([]);
      // A cut id still says what it is.
      expect(await entry(LONG_ID).getAttribute('title')).toBe(LONG_ID);
    });
  }

  it('on a phone the list stands above the session, both the screen wide, the session on the first screen', async () => {
    await open('conversation', 390, 844);
    const m = await regions(page, TOUR);
    expect(overlap(m.list, m.panel)).toBe(false);
    expect(m.list.bottom).toBeLessThanOrEqual(m.panel.top);
    for (const b of [m.list, m.panel, m.table]) {
      expect(b.right - b.left, `${b.name} is not the screen wide`).toBeGreaterThan(340);
      expect(b.left).toBeGreaterThanOrEqual(0);
      expect(b.right).toBeLessThanOrEqual(390);
    }
    expect(m.panel.top).toBeLessThan(844);
    // Ids short enough for the screen show whole.
    for (const id of [TOUR, TOUR_CHILD]) {
      const shown = await entry(id).evaluate((el: any) => el.scrollWidth <= el.clientWidth);
      expect(shown, `${id} is cut`).toBe(true);
    }
  });

  it("folds a parent's subagents in the list and unfolds them", async () => {
    await open('list', 1440, 900);
    const toggle = page.getByRole('button', { name: `Subagents of ${TOUR}`, exact: true });
    const child = entry(TOUR_CHILD);
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
