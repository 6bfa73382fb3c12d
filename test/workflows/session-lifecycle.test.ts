// Lifecycle on a real Temporal server: pre-step rejection, signals from the `temporal` CLI binary,
// resume after close and after a terminated run (crash repair + `resume` header), continue-as-new.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SessionEvent } from '../../src/core/index.js';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import { closeSignal, followupSignal, sessionWorkflowId, stateQuery } from '../../src/shared/session-messages.js';
import {
  SESSION_STATUS_ATTRIBUTE,
  SESSION_TOKENS_ATTRIBUTE,
  SESSION_TURNS_ATTRIBUTE,
} from '../../src/shared/search-attributes.js';
import { echoTool } from '../helpers/test-tools.js';
import {
  expectProviderSawTheLog,
  type Harness,
  startHarness,
  startHarnessOnOwnServer,
  waitForTurnEnd,
} from '../helpers/session-harness.js';

const run = promisify(execFile);
const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [`${e.turn}:${e.reason}`] : []));
const headerReasons = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'request/header' ? [e.reason] : []));

describe('session lifecycle on a real Temporal server', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'hello' }, text: 'hi', repeat: 10 },
          { match: { lastUserContains: 'from the cli' }, text: 'cli heard', repeat: 2 },
          { match: { lastUserContains: 'slow' }, text: 'slow answer', delayMs: 3000 },
        ],
      },
      tools: [echoTool],
      preStep: (batch) =>
        Promise.resolve(
          batch.some((m) => typeof m.content === 'string' && m.content.includes('forbidden'))
            ? { decision: 'reject', reason: 'forbidden words' }
            : { decision: 'enter' },
        ),
    });
  });
  afterAll(async () => h?.stop());

  it('a pre-step rejection ends the turn blocked and the batch is not returned to the queue', async () => {
    const handle = await h.start('blocked');
    await handle.signal(followupSignal, { content: 'say something forbidden' });
    const events = await waitForTurnEnd(h.store, 'blocked', 1);
    expect(turnEnds(events)).toEqual(['1:blocked']);
    expect(events.some((e) => e.type === 'step/start')).toBe(false);
    expect(events.find((e) => e.type === 'inbox/claim')).toMatchObject({ turn: 1, step: 1 });
    expect(events.find((e) => e.type === 'turn/end')).toMatchObject({
      error: { code: 'PRE_STEP_REJECTED', message: 'forbidden words' },
    });
    const state = await handle.query(stateQuery);
    expect(state.queues).toEqual({ nextTurn: 0, nextStep: 0, notYetLogged: 0 });
    await handle.signal(followupSignal, { content: 'hello again' });
    const after = await waitForTurnEnd(h.store, 'blocked', 2);
    expect(turnEnds(after)).toEqual(['1:blocked', '2:completed']);
    expect(
      after.filter((e) => e.type === 'user/message').map((e) => (e.type === 'user/message' ? e.content : '')),
    ).toEqual(['hello again']);
    await expectProviderSawTheLog(h, ['blocked']);
  });

  it('a signal sent by the temporal CLI binary behaves like one from the TypeScript client', async () => {
    const handle = await h.start('cli');
    await run(inject('temporalCliPath'), [
      'workflow',
      'signal',
      '--address',
      inject('temporalAddress'),
      '--namespace',
      inject('temporalNamespace'),
      '--workflow-id',
      sessionWorkflowId('cli'),
      '--name',
      'followup',
      '--input',
      JSON.stringify({ content: 'hello from the cli', source: 'cli', messageId: 'cli-1' }),
    ]);
    const events = await waitForTurnEnd(h.store, 'cli', 1);
    expect(events.find((e) => e.type === 'inbox/enqueue')).toMatchObject({
      messageId: 'cli-1',
      origin: 'followup',
      source: 'cli',
      content: 'hello from the cli',
    });
    expect(turnEnds(events)).toEqual(['1:completed']);
    await expectProviderSawTheLog(h, ['cli']);
    expect((await handle.query(stateQuery)).rejectedSignals).toBe(0);
  });

  it('resuming a closed session starts a new run over the same log with a resume header', async () => {
    const first = await h.start('resume');
    await first.signal(followupSignal, { content: 'hello' });
    await first.signal(closeSignal);
    await first.result();
    const second = await h.start('resume');
    await second.signal(followupSignal, { content: 'hello, still there?' });
    const events = await waitForTurnEnd(h.store, 'resume', 2);
    expect(turnEnds(events)).toEqual(['1:completed', '2:completed']);
    expect(headerReasons(events)).toEqual(['initial', 'resume']);
    expect(events.filter((e) => e.type === 'session/start')).toHaveLength(1);
    await expectProviderSawTheLog(h, ['resume']);
    expect(await checkHistoryMirror(h.client, h.store, 'resume')).toMatchObject({ ok: true, runs: 2 });
    // Status, turns and tokens are visible (and filterable) in Temporal.
    const described = await second.describe();
    expect(described.typedSearchAttributes.get(SESSION_STATUS_ATTRIBUTE)).toBe('idle');
    expect(described.typedSearchAttributes.get(SESSION_TURNS_ATTRIBUTE)).toBe(2);
    expect(described.typedSearchAttributes.get(SESSION_TOKENS_ATTRIBUTE)).toBeGreaterThan(0);
  });

  it('a terminated run leaves an open turn; the next run repairs it (interrupted) and carries on', async () => {
    const first = await h.start('repair');
    await first.signal(followupSignal, { content: 'slow' });
    for (
      let i = 0;
      i < 100 && !(await h.store.read('repair').catch(() => [])).some((e) => e.type === 'request/sent');
      i++
    )
      await new Promise((r) => setTimeout(r, 50));
    await first.terminate('simulated failure');
    const second = await h.start('repair');
    await second.signal(followupSignal, { content: 'hello after the failure' });
    const events = await waitForTurnEnd(h.store, 'repair', 2);
    expect(turnEnds(events)).toEqual(['1:interrupted', '2:completed']);
    expect(headerReasons(events)).toEqual(['initial', 'resume']);
  });
});

describe('continue-as-new on a server that suggests it early', () => {
  let h: Harness;
  beforeAll(async () => {
    // Suggest continue-as-new after 40 events; terminate a run at 160 (a run without continue-as-new would die).
    h = await startHarnessOnOwnServer(
      {
        'limit.historyCount.suggestContinueAsNew': 40,
        'limit.historyCount.error': 160,
        'limit.historyCount.warn': 120,
      },
      {
        script: {
          // In order: each turn calls the tool once, then answers.
          replies: Array.from({ length: 12 }, () => [
            { toolCalls: [{ id: 'e', name: 'echo', arguments: '{"text":"x"}' }] },
            { text: 'done' },
          ]).flat(),
        },
        tools: [echoTool],
      },
    );
  }, 120_000);
  afterAll(async () => h?.stop());

  it('runs twelve tool turns across several runs, with messages arriving across the hand-overs, and loses nothing', async () => {
    const handle = await h.start('can');
    for (let i = 1; i <= 12; i++) {
      await handle.signal(followupSignal, { content: `echo it #${i}`, messageId: `f-${i}` });
      if (i % 3 === 0) await new Promise((r) => setTimeout(r, 300));
    }
    const events = await waitForTurnEnd(h.store, 'can', 12, 90_000);
    expect(turnEnds(events)).toEqual(Array.from({ length: 12 }, (_, i) => `${i + 1}:completed`));
    const claimed = events.flatMap((e) => (e.type === 'inbox/claim' ? e.messageIds : []));
    expect(claimed).toEqual(Array.from({ length: 12 }, (_, i) => `f-${i + 1}`));
    // The same loop instance throughout: one header, no resume.
    expect(headerReasons(events)).toEqual(['initial']);
    const mirror = await checkHistoryMirror(h.client, h.store, 'can');
    expect(mirror.problem).toBeNull();
    expect(mirror.runs).toBeGreaterThan(2);
    // Proof that the hand-overs were needed: the runs' histories together exceed the 160-event limit.
    let total = 0;
    let runId: string | undefined = (await handle.describe()).runId;
    while (runId) {
      const history = await h.client.workflow.getHandle(sessionWorkflowId('can'), runId).fetchHistory();
      total += history.events?.length ?? 0;
      runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
    }
    expect(total).toBeGreaterThan(160);
    await expectProviderSawTheLog(h, ['can']);
  }, 120_000);
});
