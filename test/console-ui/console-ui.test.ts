// The web console in Debian's chromium on the built app, over the real console server, Temporal, worker and
// scripted provider: a session's steps, a step's request and diff, a steer mid-turn, an approval, a fork with one
// click, an API error as sent, a queued message, a step interrupted mid-stream shown so, the warning when no
// worker polls, session ids as links, statuses as badges, and the token field only where the server wants one.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { approvalShortId } from '../../src/core/index.js';
import { forkSession } from '../../src/operations/fork-session.js';
import { MAX_MESSAGE_CHARS } from '../../src/shared/session-messages.js';
import { SessionClient } from '../../src/client/session-client.js';
import { followupSignal } from '../../src/shared/session-messages.js';
import { approvalPolicyPlugin } from '../../src/plugins/basic-plugins.js';
import { echoTool, sleepTool } from '../helpers/test-tools.js';
import { startHarness, waitForState, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { launchChromium, recordBrowserLog, screenshot } from './console-browser.js';
import { startConsoleUnderTest, type ConsoleUnderTest } from './console-under-test.js';

const STEER = 'Use YAML, not JSON.';

// Code run in the page: this project's TypeScript has no DOM types, so the page's globals are declared loosely.
declare const window: any;

describe('web console in chromium', () => {
  let h: Harness;
  let ui: ConsoleUnderTest;
  let browser: Browser;
  let page: Page;
  const browserLog = join(mkdtempSync(join(tmpdir(), 'dh-console-ui-')), 'browser.log');

  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          // A step long enough (the tool sleeps) to steer while it runs; the steer is the next step's last user text.
          {
            match: { lastUserContains: 'slow task' },
            toolCalls: [{ id: 's1', name: 'sleep', arguments: { ms: 4000 } }],
          },
          { match: { lastUserContains: 'YAML' }, text: 'Switching to YAML.' },
          {
            match: { lastUserContains: 'needs a yes' },
            toolCalls: [{ id: 'g1', name: 'shout', arguments: { text: 'hey' } }],
          },
          { match: { lastUserContains: 'needs a yes' }, text: 'shouted' },
          {
            match: { lastUserContains: 'hold for the queue' },
            text: 'an answer held mid-stream',
            chunkSize: 4,
            hold: { afterChunks: 1, key: 'ui-queue' },
          },
          { match: { lastUserContains: 'queued in the page' }, text: 'the queued steer entered' },
          {
            match: { lastUserContains: 'hold then interrupt' },
            text: 'an answer the operator cuts short',
            chunkSize: 4,
            hold: { afterChunks: 1, key: 'ui-interrupt' },
          },
        ],
      },
      tools: [
        sleepTool(join(tmpdir(), `dh-console-ui-sleep-${process.pid}.log`)),
        { ...echoTool, schema: { ...echoTool.schema, name: 'shout' } },
      ],
      plugins: [approvalPolicyPlugin({ ask: ['shout'] })],
    });
    ui = await startConsoleUnderTest(h);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    // Page errors and console output, kept for a failed run.
    recordBrowserLog(page, browserLog);
    await page.goto(ui.url);
  });
  afterAll(async () => {
    await browser?.close();
    await ui?.stop();
    await h?.stop();
  });

  /** A session's link in the list (the page links to sessions from elsewhere too). */
  const listLink = (id: string, on: Page = page) =>
    on.getByRole('region', { name: 'Sessions', exact: true }).getByRole('link', { name: id, exact: true });

  it('lists a session, shows its steps, and a steer sent mid-turn enters the next step', async () => {
    const handle = await h.start('ui-steer');
    await handle.signal(followupSignal, { content: 'slow task' });
    await waitForState(handle, (s) => s.status === 'running' && s.step === 1);

    await listLink('ui-steer').click();
    const session = page.getByRole('region', { name: 'Session ui-steer' });
    await session.getByRole('article', { name: 'Turn 1 step 1' }).waitFor();

    // The tool sleeps now: steer through the form.
    await session.getByLabel('Kind').selectOption('steer');
    await session.getByLabel('Message').fill(STEER);
    await session.getByRole('button', { name: 'Send' }).click();
    await expect
      .poll(() => session.getByRole('status', { name: 'Action result' }).textContent())
      .toBe('steer: accepted');

    const step2 = session.getByRole('article', { name: 'Turn 1 step 2' });
    await step2.getByText(STEER).waitFor({ timeout: 20_000 });
    await waitForTurnEnd(h.store, 'ui-steer', 1);
    await step2.getByText('Switching to YAML.').waitFor({ timeout: 10_000 });
    await screenshot(page, 'console-timeline');

    // What the model saw at step 2: verified, and step 1's request plus what was appended.
    await step2.getByRole('button', { name: 'Request of turn 1 step 2' }).click();
    const request = session.getByRole('region', { name: 'Request of turn 1 step 2' });
    await request.getByText('Digest verified').waitFor();
    const diff = request.getByRole('group', { name: 'Diff against the previous request' });
    await diff.getByText('Compared with turn 1, step 1').waitFor();
    await expect.poll(() => diff.textContent()).toMatch(/Prefix intact/);
    await expect.poll(() => request.getByRole('list', { name: 'Request messages' }).textContent()).toContain(STEER);
    await screenshot(page, 'console-step');
  });

  it('approves a waiting tool call from the page', async () => {
    const handle = await h.start('ui-approve');
    await handle.signal(followupSignal, { content: 'needs a yes' });
    await waitForState(handle, (s) => s.pendingApproval !== null);

    await listLink('ui-approve').click();
    const session = page.getByRole('region', { name: 'Session ui-approve' });
    const approval = session.getByRole('group', { name: 'Pending approval' });
    await approval.getByText('shout').first().waitFor();
    // Shown by its short id, with a third button that also remembers the approval for the tool.
    await approval.getByText(approvalShortId('g1'), { exact: true }).waitFor();
    await approval.getByRole('button', { name: 'Approve & remember' }).waitFor();
    await approval.getByRole('button', { name: 'Approve', exact: true }).click();

    const events = await waitForTurnEnd(h.store, 'ui-approve', 1);
    const decision = events.find((e) => e.type === 'approval/decision');
    expect(decision).toMatchObject({ callId: 'g1', decision: 'approve' });
    await session.getByText('shouted').waitFor({ timeout: 10_000 });
    // The page's state follows (the next poll or the live status message).
    await expect.poll(() => approval.count(), { timeout: 10_000 }).toBe(0);
  });

  it('forks after a turn with one click, and opens the fork', async () => {
    const session = page.getByRole('region', { name: 'Session ui-approve' });
    const turnEnd = (await h.store.read('ui-approve')).find((e) => e.type === 'turn/end');
    await session.getByRole('button', { name: 'Fork from here, after turn 1' }).click();
    // The page moves to the new session, which names where it came from.
    await expect.poll(() => new URL(page.url()).hash, { timeout: 10_000 }).toMatch(/^#\/sessions\/ui-approve-fork-/);
    const forkId = decodeURIComponent(new URL(page.url()).hash.replace('#/sessions/', ''));
    const fork = page.getByRole('region', { name: `Session ${forkId}`, exact: true });
    await fork.getByText('Forked from').waitFor({ timeout: 10_000 });
    // Its log is the parent's up to and with the end of turn 1.
    const start = (await h.store.read(forkId))[0];
    expect(start?.type === 'session/start' && start.parent).toEqual({
      sessionId: 'ui-approve',
      seedLength: (turnEnd?.seq ?? NaN) + 1,
    });
    await fork.getByRole('article', { name: 'Turn 1 step 2' }).getByText('shouted').waitFor();
  });

  it('shows an API error exactly as the server returned it', async () => {
    await listLink('ui-approve').click();
    const session = page.getByRole('region', { name: 'Session ui-approve' });
    // A message over the size limit: the API refuses it.
    const content = 'x'.repeat(MAX_MESSAGE_CHARS + 1);
    await session.getByLabel('Message').fill(content);
    await session.getByRole('button', { name: 'Send' }).click();
    const alert = session.getByRole('alert', { name: 'Action result' });
    await alert.waitFor({ timeout: 10_000 });
    const response = await fetch(new URL('/api/sessions/ui-approve/messages', ui.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'followup', content }),
    });
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(response.status).toBe(400);
    expect(await alert.textContent()).toBe(`${body.error.code}: ${body.error.message}`);
  });

  it('lists sessions as links: a plain click opens one in the page, a ctrl-click in a new tab', async () => {
    await page.goto(ui.url);
    const link = listLink('ui-steer');
    expect(await link.getAttribute('href')).toBe('#/sessions/ui-steer');
    expect(await link.getAttribute('target')).toBeNull();
    // A plain click: the same document (the marker survives), the session open, the address naming it.
    await page.evaluate(() => (window.__samePage = true));
    await link.click();
    await page
      .getByRole('region', { name: 'Session ui-steer' })
      .getByRole('article', { name: 'Turn 1 step 1' })
      .waitFor();
    expect(await page.evaluate(() => window.__samePage)).toBe(true);
    expect(new URL(page.url()).hash).toBe('#/sessions/ui-steer');
    expect(await link.getAttribute('aria-current')).toBe('page');
    // Ctrl-click: a new tab on that session, the page itself unchanged.
    const [tab] = await Promise.all([
      page.context().waitForEvent('page'),
      listLink('ui-approve').click({ modifiers: ['Control'] }),
    ]);
    await tab.waitForLoadState();
    expect(new URL(tab.url()).hash).toBe('#/sessions/ui-approve');
    await tab.getByRole('region', { name: 'Session ui-approve' }).waitFor({ timeout: 10_000 });
    await tab.close();
    expect(new URL(page.url()).hash).toBe('#/sessions/ui-steer');
  });

  it('shows each status as a badge with its word, in the list and on the session', async () => {
    await page.goto(`${ui.url}#/sessions/ui-steer`);
    // (`has` looks inside each row: the link by its name alone.)
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'ui-steer', exact: true }) });
    const badge = row.locator('.status-badge');
    await expect.poll(() => badge.textContent(), { timeout: 10_000 }).toBe('idle');
    expect(await badge.getAttribute('class')).toContain('tone-ready');
    const status = page.getByRole('region', { name: 'Session ui-steer' }).getByTestId('session-status');
    await expect.poll(() => status.textContent(), { timeout: 10_000 }).toBe('idle');
    expect(await status.getAttribute('class')).toContain('tone-ready');
  });

  it('shows no token field on loopback, where the server takes none', async () => {
    await page.goto(ui.url);
    await listLink('ui-steer').waitFor({ timeout: 10_000 });
    // The list has been answered (and polled again): no request was refused, no field shows.
    await page.waitForResponse((r) => new URL(r.url()).pathname === '/api/sessions' && r.status() === 200);
    expect(await page.getByLabel('Bearer token').count()).toBe(0);
  });

  it('asks for the token once a server that requires one refuses the page, and lists the sessions with it', async () => {
    const token = `ui-token-${process.pid}`;
    const guarded = await startConsoleUnderTest(h, { token });
    const tab = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    try {
      recordBrowserLog(tab, browserLog);
      const refused = tab.waitForResponse((r) => new URL(r.url()).pathname === '/api/sessions' && r.status() === 401);
      await tab.goto(guarded.url);
      await refused;
      const field = tab.getByLabel('Bearer token');
      await field.waitFor({ timeout: 10_000 });
      expect(await listLink('ui-steer', tab).count()).toBe(0);
      await field.fill(token);
      await listLink('ui-steer', tab).waitFor({ timeout: 10_000 });
    } finally {
      await tab.close();
      await guarded.stop();
    }
  });

  it('shows a message in its queue while the step streams, then in the step it entered', async () => {
    const handle = await h.start('ui-queue');
    await handle.signal(followupSignal, { content: 'hold for the queue' });
    await waitForState(handle, (s) => s.status === 'running' && s.step === 1);
    await listLink('ui-queue').click();
    const session = page.getByRole('region', { name: 'Session ui-queue' });
    await session.getByLabel('Kind').selectOption('steer');
    await session.getByLabel('Message').fill('queued in the page');
    await session.getByRole('button', { name: 'Send' }).click();
    // Held mid-stream: the steer can only be queued, and the page shows it so.
    const queued = session.getByRole('region', { name: 'Queued messages' });
    try {
      await queued.getByText('queued in the page').waitFor({ timeout: 20_000 });
      expect(await queued.textContent()).toMatch(/steer( \([^)]*\))? → next step: queued in the page/);
      expect((await h.store.read('ui-queue')).some((e) => e.type === 'assistant/message')).toBe(false);
    } finally {
      h.provider.release('ui-queue');
    }
    await waitForTurnEnd(h.store, 'ui-queue', 1);
    await session
      .getByRole('article', { name: 'Turn 1 step 2' })
      .getByText('queued in the page')
      .waitFor({ timeout: 20_000 });
    await expect.poll(() => queued.count(), { timeout: 10_000 }).toBe(0);
  });

  it('shows a step interrupted while its answer streamed as interrupted, never as running', async () => {
    const handle = await h.start('ui-interrupt');
    await handle.signal(followupSignal, { content: 'hold then interrupt' });
    await waitForState(handle, (s) => s.status === 'running' && s.step === 1);
    await listLink('ui-interrupt').click();
    const session = page.getByRole('region', { name: 'Session ui-interrupt' });
    const state = session.getByRole('article', { name: 'Turn 1 step 1' }).getByTestId('step-state');
    try {
      // Held mid-stream: the step runs, and the page says so.
      await expect.poll(() => state.textContent(), { timeout: 20_000 }).toBe('running');
      await new SessionClient(h.client, { taskQueue: h.taskQueue }).interrupt('ui-interrupt');
      await waitForTurnEnd(h.store, 'ui-interrupt', 1);
    } finally {
      h.provider.release('ui-interrupt');
    }
    // The cut answer carries no usage: the case the page used to show as still running.
    const answer = (await h.store.read('ui-interrupt')).find((e) => e.type === 'assistant/message');
    expect(answer).toMatchObject({ interrupted: true });
    expect(answer?.type === 'assistant/message' && answer.usage).toBeFalsy();
    await expect.poll(() => state.textContent(), { timeout: 10_000 }).toBe('interrupted');
    await session.getByText('cut by an interrupt').waitFor();
    expect(await session.getByTestId('turn-end').textContent()).toMatch(/^Turn 1 ended: (aborted|interrupted)/);
    // The same after a reload: read from the log, not remembered by the page.
    await page.reload();
    const again = page
      .getByRole('region', { name: 'Session ui-interrupt' })
      .getByRole('article', { name: 'Turn 1 step 1' })
      .getByTestId('step-state');
    await expect.poll(() => again.textContent(), { timeout: 10_000 }).toBe('interrupted');
  });

  it("warns on the page when no worker polls the session's task queue, and on a message sent to it", async () => {
    // A fork whose workflow went to a queue no worker polls (a console or dh started with another DH_TASK_QUEUE).
    const unpolled = new SessionClient(h.client, { taskQueue: `ui-unpolled-${process.pid}-${Date.now()}` });
    const forkId = await forkSession(h.store, unpolled, 'ui-approve', {
      atSeq: await h.store.head('ui-approve'),
      as: 'ui-no-worker',
    });
    await page.reload();
    await listLink(forkId).click();
    const session = page.getByRole('region', { name: `Session ${forkId}` });
    const warning = session.getByTestId('worker-warning');
    await warning.waitFor({ timeout: 10_000 });
    expect(await warning.textContent()).toContain(`no worker is polling task queue "${unpolled.options.taskQueue}"`);
    await session.getByLabel('Kind').selectOption('steer');
    await session.getByLabel('Message').fill('anyone?');
    await session.getByRole('button', { name: 'Send' }).click();
    const result = session.getByRole('alert', { name: 'Action result' });
    await result.waitFor({ timeout: 10_000 });
    expect(await result.textContent()).toMatch(/^steer: accepted, but no worker is polling task queue/);
    await screenshot(page, 'console-no-worker');
  });
});
