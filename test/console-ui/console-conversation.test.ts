// A session as a conversation in Debian's chromium over the real stack: tool cards with verdicts and a named
// approval, injected context, a compaction, a subagent link, markdown (a hostile answer harmless), raw events on
// demand, the keyboard walking the steps, a step's permalink, the waterfall and the cost by model, and the
// figures said as a person would (events, shared messages, prices).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Timeline } from '../../src/console/console-api.js';
import type { Harness } from '../helpers/session-harness.js';
import { ARTIFACTS_DIR, launchChromium, recordBrowserLog, screenshot } from './console-browser.js';
import { startConsoleUnderTest, type ConsoleUnderTest } from './console-under-test.js';
import { HOSTILE_ANSWER, INJECTED, REVIEWER, runTour, startTourHarness, tourChild } from './tour-session.js';

const TOUR = 'ui-tour';
const TOUR_CHILD = tourChild(TOUR);

// Code run in the page: this project's TypeScript has no DOM types, so the page's globals are declared loosely.
declare const document: any, window: any;

describe('a session as a conversation in the web console', () => {
  let h: Harness;
  let ui: ConsoleUnderTest;
  let browser: Browser;
  let page: Page;
  const browserLog = join(mkdtempSync(join(tmpdir(), 'dh-console-conversation-')), 'browser.log');
  let errors: string[] = [];
  const dialogs: string[] = [];

  beforeAll(async () => {
    h = await startTourHarness();
    await runTour(h, TOUR);
    // The log the page draws, kept for a failed run.
    mkdirSync(ARTIFACTS_DIR, { recursive: true });
    writeFileSync(join(ARTIFACTS_DIR, `${TOUR}.events.json`), JSON.stringify(await h.store.read(TOUR), null, 1));
    ui = await startConsoleUnderTest(h);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    errors = recordBrowserLog(page, browserLog);
    // A hostile answer that got through would most likely show itself as a dialog or a request for `x`.
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await ui?.stop();
    await h?.stop();
  });

  const session = (id = TOUR) => page.getByRole('region', { name: `Session ${id}`, exact: true });
  const step = (turn: number, n: number, id = TOUR) =>
    session(id).getByRole('article', { name: `Turn ${turn} step ${n}`, exact: true });
  const card = (scope: Locator, name: string, callId: string) =>
    scope.getByRole('group', { name: `Tool call ${name} (${callId})`, exact: true });
  /** The aria-label of the element that has the keyboard focus. */
  const focusedLabel = () => page.evaluate(() => document.activeElement?.getAttribute('aria-label') ?? null);

  async function openTour(hash = `#/sessions/${TOUR}`): Promise<void> {
    // A fresh document each time: a hash-only goto would stay on the page as it was.
    await page.goto('about:blank');
    await page.goto(`${ui.url}${hash}`);
    await step(3, 1).waitFor({ timeout: 20_000 });
  }

  it("draws steps with their state, tool cards with the policy's verdicts and the approval, context, compaction and subagent", async () => {
    await openTour();
    for (const [turn, n] of [
      [1, 1],
      [1, 2],
      [2, 1],
      [3, 1],
    ] as const) {
      await expect.poll(() => step(turn, n).getByTestId('step-state').textContent()).toBe('completed');
    }

    // Turn 1, step 1: three calls, each a card that says how it ended and what the policy said.
    const first = step(1, 1);
    const echo = card(first, 'echo', 'e1');
    const shout = card(first, 'shout', 's1');
    const delegate = card(first, 'delegate', 'd1');
    for (const c of [echo, shout, delegate]) expect(await c.getByTestId('tool-status').textContent()).toBe('ok');
    expect(await echo.getByTestId('policy-verdict').textContent()).toBe('policy: allow by rule echo-ok');
    expect(await shout.getByTestId('policy-verdict').textContent()).toMatch(/^policy: ask by /);
    expect(await shout.getByTestId('approval-marker').textContent()).toBe(`approval asked · approved by ${REVIEWER}`);
    expect(await echo.getByTestId('approval-marker').count()).toBe(0);
    // Folded by default; opened, the arguments and the result.
    expect(await shout.getByText('"text": "hey"').isVisible()).toBe(false);
    await shout.locator('summary').click();
    await shout.getByText('"text": "hey"').waitFor();
    expect(await shout.getByTestId('tool-output').textContent()).toBe('echo: "hey"');

    // The subagent: a link to its own session.
    const link = delegate.getByRole('link', { name: `subagent ${TOUR_CHILD}` });
    expect(await link.getAttribute('href')).toBe(`#/sessions/${TOUR_CHILD}`);

    // Turn 2: the followup and the injected context, marked as context and by its sender.
    const messages = step(2, 1).getByTestId('user-message');
    const injected = messages.filter({ hasText: INJECTED });
    expect(await injected.getAttribute('data-origin')).toBe('inject');
    expect(await injected.textContent()).toMatch(/^context · inject from ops-bot/);
    expect(await messages.filter({ hasText: 'Anything to know?' }).getAttribute('data-origin')).toBe('followup');

    // The compaction: a divider between turn 2 and turn 3.
    const compaction = session().getByRole('separator', { name: 'Compaction' });
    expect(await compaction.textContent()).toMatch(/^Compaction \(manual\).* · applied$/);
    const [after2, divider, before3] = await Promise.all([
      step(2, 1).boundingBox(),
      compaction.boundingBox(),
      step(3, 1).boundingBox(),
    ]);
    expect(after2!.y + after2!.height).toBeLessThanOrEqual(divider!.y);
    expect(divider!.y + divider!.height).toBeLessThanOrEqual(before3!.y);

    // Raw events: not by default; on demand, the events as logged.
    expect(await session().getByTestId('raw-events').count()).toBe(0);
    const rawToggle = session().getByRole('button', { name: 'Raw events' });
    await rawToggle.click();
    await expect.poll(() => first.getByTestId('raw-events').textContent()).toContain(`"type":"approval/decision"`);
    await rawToggle.click();
    await expect.poll(() => session().getByTestId('raw-events').count()).toBe(0);

    // Following the subagent's link opens the child, which links back to its parent.
    await link.click();
    await expect.poll(() => new URL(page.url()).hash).toBe(`#/sessions/${TOUR_CHILD}`);
    await step(1, 1, TOUR_CHILD).getByText('child reporting back').waitFor({ timeout: 10_000 });
    expect(await session(TOUR_CHILD).getByText('Subagent of').textContent()).toContain(TOUR);
    await page.goBack();
    await step(1, 1).waitFor({ timeout: 10_000 });
    expect(errors).toEqual([]);
  }, 60_000);

  it('renders answers as markdown, and a hostile answer as harmless text', async () => {
    await openTour();
    const markdown = step(1, 2).getByTestId('answer-markdown');
    expect(await markdown.locator('strong').textContent()).toBe('started well');
    expect(await markdown.locator('code').allTextContents()).toEqual(['echo', 'shout']);

    const hostile = step(2, 1).getByTestId('answer-markdown');
    await hostile.waitFor();
    // The markup is shown as text; only the markdown in it became elements.
    expect(await hostile.textContent()).toContain('<img src=x onerror="window.__pwned=1">');
    expect(await hostile.textContent()).toContain('<script>window.__pwned=3</script>');
    expect(await hostile.locator('strong').textContent()).toBe('bold move');
    expect(await hostile.locator('img, script, iframe, a').count()).toBe(0);
    expect(await page.locator('img, script:not([type="module"]), iframe').count()).toBe(0);
    expect(await page.locator('[onerror], [onclick], [onload]').count()).toBe(0);
    expect(await page.locator('a[href^="javascript:" i]').count()).toBe(0);
    expect(await page.evaluate(() => window.__pwned)).toBeUndefined();
    expect(dialogs).toEqual([]);
    // The answer exactly as logged, one click away.
    await step(2, 1)
      .getByText(/^Answer as logged/)
      .click();
    expect(await step(2, 1).getByTestId('step-answer').textContent()).toBe(HOSTILE_ANSWER);
  });

  it('walks the steps with j/k and the arrow keys; Enter opens what the model saw, Escape closes it', async () => {
    await openTour();
    // As a reader arrives: the session picked in the list (the focus stays on its button there).
    await page
      .getByRole('region', { name: 'Sessions', exact: true })
      .getByRole('link', { name: TOUR, exact: true })
      .click();
    const expectFocus = async (label: string) => {
      await expect.poll(focusedLabel).toBe(label);
      // The focus ring follows with the page's next render.
      const article = page.getByRole('article', { name: label, exact: true });
      await expect.poll(() => article.getAttribute('class')).toMatch(/\bfocused\b/);
    };
    await page.keyboard.press('j');
    await expectFocus('Turn 1 step 1');
    await page.keyboard.press('j');
    await expectFocus('Turn 1 step 2');
    await page.keyboard.press('ArrowDown');
    await expectFocus('Turn 2 step 1');
    await page.keyboard.press('ArrowDown');
    await expectFocus('Turn 3 step 1');
    await page.keyboard.press('j'); // the last step stays focused
    await expectFocus('Turn 3 step 1');
    await page.keyboard.press('k');
    await expectFocus('Turn 2 step 1');
    await page.keyboard.press('ArrowUp');
    await expectFocus('Turn 1 step 2');

    await page.keyboard.press('Enter');
    const request = session().getByRole('region', { name: 'Request of turn 1 step 2' });
    await request.getByText('Digest verified').waitFor({ timeout: 10_000 });
    expect(new URL(page.url()).hash).toBe(`#/sessions/${TOUR}/steps/1/2`);
    // What the model saw: the conversation so far, with the tool calls and their results.
    const sent = request.getByRole('list', { name: 'Request messages' });
    await expect.poll(() => sent.textContent()).toContain('Please start the tour.');
    expect(await sent.textContent()).toContain('→ calls shout');
    expect(await sent.textContent()).toContain('answers s1');
    const diff = request.getByRole('group', { name: 'Diff against the previous request' });
    expect(await diff.textContent()).toContain('Compared with turn 1, step 1');

    await page.keyboard.press('Escape');
    await expect.poll(() => request.count()).toBe(0);
    expect(new URL(page.url()).hash).toBe(`#/sessions/${TOUR}`);
  });

  it("a step's permalink opens the session on that step: focused, in view, with its request open", async () => {
    await openTour(`#/sessions/${TOUR}/steps/2/1`);
    const request = session().getByRole('region', { name: 'Request of turn 2 step 1' });
    await request.getByText('Digest verified').waitFor({ timeout: 10_000 });
    await expect.poll(focusedLabel).toBe('Turn 2 step 1');
    const inView = async () => {
      const box = await step(2, 1).boundingBox();
      const height = page.viewportSize()?.height ?? 0;
      return box !== null && box.y >= -1 && box.y < height / 2;
    };
    await expect.poll(inView).toBe(true);
    // The injected context, as the model saw it.
    await expect.poll(() => request.getByRole('list', { name: 'Request messages' }).textContent()).toContain(INJECTED);
    // The diff in words: what is shared and what was appended, each count with its noun in the right number.
    const diff = await request
      .getByRole('group', { name: 'Diff against the previous request' })
      .locator('li')
      .allTextContents();
    expect(diff[1]).toMatch(
      /^(No message is shared with it|The first message is shared|The first \d+ messages are shared)$/,
    );
    expect(diff[2]).toMatch(/^(Nothing appended|1 message appended|\d+ messages appended)$/);
    expect(diff.join(' ')).not.toMatch(/\b1 messages\b/);

    // A reload of the permalink lands there again.
    await page.reload();
    await session().getByRole('region', { name: 'Request of turn 2 step 1' }).getByText('Digest verified').waitFor();
    await expect.poll(focusedLabel).toBe('Turn 2 step 1');
    await expect.poll(inView).toBe(true);

    // Another step's link, followed in the page.
    await step(3, 1).getByRole('link', { name: 'Link to turn 3 step 1' }).click();
    await session().getByRole('region', { name: 'Request of turn 3 step 1' }).getByText('Digest verified').waitFor();
    await expect.poll(focusedLabel).toBe('Turn 3 step 1');
    expect(new URL(page.url()).hash).toBe(`#/sessions/${TOUR}/steps/3/1`);

    // A link of the older form still opens the session.
    await openTour(`#session=${TOUR}`);
  });

  it('shows the step waterfall, the cost by model, and the log and cost in words', async () => {
    await openTour();
    const waterfall = session().getByRole('figure', { name: 'Step waterfall' });
    await expect.poll(() => waterfall.locator('li').count()).toBe(4);
    // Step 1.1 waited for the approval: its row has an approval bar and tool bars as well as the model's.
    const kinds = await waterfall
      .locator('li[data-step="1.1"] .wf-bar')
      .evaluateAll((bars: any[]) => bars.map((b) => b.getAttribute('data-kind')));
    expect(new Set(kinds)).toEqual(new Set(['wait', 'model', 'approval', 'tool']));
    // The cost table: a row per model the API names, in its order.
    const timeline = (await (await fetch(new URL(`/api/sessions/${TOUR}/timeline`, ui.url))).json()) as Timeline;
    const costs = session().getByRole('table', { name: 'Cost by model' });
    await expect
      .poll(() => costs.locator('tbody tr td:first-child').allTextContents())
      .toEqual(timeline.costByModel.map((m) => m.model));
    // Priced: each row shows the summed cost the API gives (to 4 places), none says "no price".
    expect(timeline.costByModel.every((m) => m.usd !== null && m.usd > 0 && m.unpricedSteps === 0)).toBe(true);
    const shown = await costs.locator('tbody tr td:last-child').allTextContents();
    expect(shown).toEqual(timeline.costByModel.map((m) => `$${(m.usd ?? 0).toFixed(4)}`));

    // The session's facts: how long its log is in events, its cost summed.
    const facts = session().locator('dl.facts');
    const head = timeline.head;
    await expect.poll(() => facts.locator('dt:text-is("Log") + dd').textContent()).toBe(`${head} events`);
    expect(await facts.textContent()).not.toContain('Head');
    await screenshot(page, 'console-waterfall');
    expect(errors).toEqual([]);
  });
});
