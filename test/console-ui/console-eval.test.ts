// A `dh eval` run in the web console, in Debian's chromium on the built app: the API answers the run's report
// (and a stable 404 / 400 for an unknown or malformed run id), and the page shows the totals, each step's two
// answers side by side, the diff of their tool calls with the argument that differs, the judges, and the
// request both saw, verified against its recorded digest; what the log lacks (a price, a finish reason) in words.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvalRunView } from '../../src/console/console-api.js';
import { planEvalTargets } from '../../src/eval/plan-eval.js';
import { evalWorkflowId, type EvalRunInput } from '../../src/shared/eval-contracts.js';
import { followupSignal } from '../../src/shared/session-messages.js';
import { startEvalWorker, type EvalWorker } from '../helpers/eval-worker.js';
import { startHarness, TEST_MODEL_2, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { echoTool } from '../helpers/test-tools.js';
import { launchChromium, recordBrowserLog, screenshot } from './console-browser.js';
import { startConsoleUnderTest, type ConsoleUnderTest } from './console-under-test.js';

describe('an eval run in the web console', () => {
  let h: Harness;
  let worker: EvalWorker;
  let ui: ConsoleUnderTest;
  let browser: Browser;
  let page: Page;
  const browserLog = join(mkdtempSync(join(tmpdir(), 'dh-console-eval-')), 'browser.log');

  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'weather' },
            toolCalls: [{ id: 'w1', name: 'echo', arguments: { text: 'Paris' } }],
          },
          { match: { lastUserContains: 'weather' }, text: 'Sunny in Paris.' },
        ],
      },
      tools: [echoTool],
    });
    const handle = await h.start('ui-eval-source');
    await handle.signal(followupSignal, { content: 'What is the weather?' });
    await waitForTurnEnd(h.store, 'ui-eval-source', 1);
    worker = await startEvalWorker({
      store: h.store,
      script: {
        replies: [{ toolCalls: [{ id: 'n1', name: 'echo', arguments: { text: 'Lyon' } }] }],
        default: { text: 'Probably sunny in Paris.' },
      },
    });
    const { targets } = await planEvalTargets((id) => h.store.read(id), ['ui-eval-source'], {
      runId: 'ui-run',
      at: 'step',
    });
    const run = await h.client.workflow.start('evalRun', {
      taskQueue: worker.taskQueue,
      workflowId: evalWorkflowId('ui-run'),
      // One at a time: the first candidate (step 1.1) gets the scripted tool call.
      args: [
        {
          runId: 'ui-run',
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
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    recordBrowserLog(page, browserLog);
    await page.goto(ui.url);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await ui?.stop();
    await worker?.stop();
    await h?.stop();
  });

  it('answers the report, and a stable error for a run that does not exist or a malformed id', async () => {
    const ok = await fetch(new URL('/api/evals/ui-run', ui.url));
    expect(ok.status).toBe(200);
    const view = (await ok.json()) as EvalRunView;
    expect(view).toMatchObject({ runId: 'ui-run', status: 'COMPLETED', progress: null });
    expect(view.report?.counts).toEqual({ steps: 2, answered: 2, skipped: 0, failed: 0 });
    expect(view.report?.steps[0]?.candidate?.toolCalls.map((c) => c.arguments)).toEqual(['{"text":"Lyon"}']);

    // The session list shows the source, not its two eval logs (the run's page does).
    const list = (await (await fetch(new URL('/api/sessions', ui.url))).json()) as {
      sessions: { sessionId: string }[];
    };
    expect(list.sessions.map((s) => s.sessionId)).toEqual(['ui-eval-source']);

    const missing = await fetch(new URL('/api/evals/no-such-run', ui.url));
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('EVAL_NOT_FOUND');
    const malformed = await fetch(new URL(`/api/evals/${encodeURIComponent('bad id!')}`, ui.url));
    expect(malformed.status).toBe(400);
  });

  it('shows the steps, the two answers side by side, the tool-call diff and the request both saw', async () => {
    await page.getByLabel('Eval run', { exact: true }).fill('ui-run');
    await page.getByRole('button', { name: 'Show eval' }).click();
    const region = page.getByRole('region', { name: 'Eval run ui-run' });
    const totals = region.getByRole('definition').filter({ hasText: 'every candidate equals its recorded request' });
    await totals.waitFor({ timeout: 15_000 });
    const rows = region.getByRole('table', { name: 'Eval steps' }).getByRole('row');
    await expect.poll(() => rows.count()).toBe(3); // header + 2 steps

    // Unpriced (the harness has no pricing table): said so, as the session page says it, not "$0.000000".
    expect(await region.getByTestId('eval-cost').textContent()).toBe('no price → no price');
    // Each step names its session by a link to that step, and opens its comparison by a button.
    const source = rows.nth(1).getByRole('link', { name: 'ui-eval-source' });
    expect(await source.getAttribute('href')).toBe('#/sessions/ui-eval-source/steps/1/1');
    // The first step finished calling a tool on both sides; no row shows a raw null.
    expect(await region.getByRole('table', { name: 'Eval steps' }).textContent()).not.toMatch(/null|undefined|NaN/);
    await rows.nth(1).getByRole('button', { name: 'Compare ui-eval-source step 1.1' }).click();
    const step = region.getByRole('region', { name: 'Eval of ui-eval-source step 1.1' });
    const recorded = step.getByRole('figure', { name: 'Recorded answer' });
    const candidate = step.getByRole('figure', { name: 'Candidate answer' });
    await expect.poll(() => recorded.textContent()).toContain('echo {"text":"Paris"}');
    await expect.poll(() => candidate.textContent()).toContain('echo {"text":"Lyon"}');
    const calls = step.getByRole('table', { name: 'Tool call diff' });
    await expect.poll(() => calls.textContent()).toContain('arguments-differ at /text');
    await expect.poll(() => step.textContent()).toMatch(/Judge structural: 0\.\d\d/);

    await step.getByRole('button', { name: 'The request both saw' }).click();
    await step.getByRole('region', { name: 'Request of turn 1 step 1' }).getByText('Digest verified').waitFor();
    await screenshot(page, 'console-eval');
    expect(await step.getByRole('figure', { name: 'Candidate answer' }).textContent()).toMatch(
      /finish: \S+ · .* · no price$/,
    );
    // A lone chart across the page keeps a chart's height (it grew to its 2:1 aspect, ~600 px, before).
    const chart = await region.getByLabel('Latency per step').boundingBox();
    expect(chart?.height).toBeGreaterThan(100);
    expect(chart?.height).toBeLessThanOrEqual(300);

    // The second step: the answers side by side in text.
    await rows.nth(2).getByRole('button', { name: 'Compare ui-eval-source step 1.2' }).click();
    const second = region.getByRole('region', { name: 'Eval of ui-eval-source step 1.2' });
    await expect
      .poll(() => second.getByRole('figure', { name: 'Recorded answer' }).textContent())
      .toContain('Sunny in Paris.');
    await expect
      .poll(() => second.getByRole('figure', { name: 'Candidate answer' }).textContent())
      .toContain('Probably sunny in Paris.');
  });
});
