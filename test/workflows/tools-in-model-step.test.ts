// Quick tool calls run inside the model step on the session's host, on a real Temporal server: one activity
// per tool step (and none for the turn's end), the same log as a tool step activity writes, interrupts and
// approvals as before, and a step with a tool that is not quick still goes to the tool step activity.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import { emptyUsage, addUsage, type SessionEvent } from '../../src/core/index.js';
import type { Plugin } from '../../src/plugins/plugin.js';
import { approveUpdate, followupSignal, interruptSignal, stateQuery } from '../../src/shared/session-messages.js';
import type { ToolDefinition } from '../../src/plugins/contracts.js';
import { echoTool, quickVariant, sleepTool } from '../helpers/test-tools.js';
import {
  expectProviderSawTheLog,
  startHarness,
  waitForState,
  waitForTurnEnd,
  type Harness,
} from '../helpers/session-harness.js';

const runLog = join(mkdtempSync(join(tmpdir(), 'dh-quick-')), 'sleep.log');
/** A slow tool declared quick, so an interrupt can land while it runs inside the model step. */
const quickSleep = quickVariant(sleepTool(runLog));
/** Asks for approval of every `guarded_echo` call; allows the rest. */
const askForGuarded: Plugin = {
  name: 'ask-for-guarded',
  toolBefore: (call) => (call.name === 'guarded_echo' ? { decision: 'ask', reason: 'guarded' } : { decision: 'allow' }),
};
const guardedEcho: ToolDefinition = { ...echoTool, schema: { ...echoTool.schema, name: 'guarded_echo' } };

async function scheduledActivities(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [name] : [];
  });
}

const results = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'tool/result' ? [`${e.callId}:${e.status}`] : []));
const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [`${e.turn}:${e.reason}`] : []));

describe('quick tool calls in the model step, on a real Temporal server', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'two quick steps' },
            toolCalls: [
              { id: 'q1', name: 'echo', arguments: '{"text":"a"}' },
              { id: 'q2', name: 'echo', arguments: '{"text":"b"}' },
            ],
            repeat: 2,
          },
          { match: { lastUserContains: 'two quick steps' }, text: 'done quickly' },
          {
            match: { lastUserContains: 'count the commits' },
            toolCalls: [
              { id: 'c1', name: 'echo', arguments: '{"text":"a"}' },
              { id: 'c2', name: 'echo', arguments: '{"text":"b"}' },
            ],
          },
          { match: { lastUserContains: 'count the commits' }, text: 'counted' },
          {
            match: { lastUserContains: 'mixed step' },
            toolCalls: [
              { id: 'm1', name: 'echo', arguments: '{"text":"a"}' },
              { id: 'm2', name: 'sleep', arguments: '{"ms":10}' },
            ],
          },
          { match: { lastUserContains: 'mixed step' }, text: 'done mixed' },
          {
            match: { lastUserContains: 'slow quick tool' },
            toolCalls: [
              { id: 's1', name: 'quick_sleep', arguments: '{"ms":60000}' },
              { id: 's2', name: 'echo', arguments: '{"text":"never"}' },
            ],
          },
          {
            match: { lastUserContains: 'ask first' },
            toolCalls: [{ id: 'g1', name: 'guarded_echo', arguments: '{"text":"g"}' }],
          },
          { match: { lastUserContains: 'ask first' }, text: 'approved and done' },
        ],
      },
      tools: [echoTool, sleepTool(runLog), quickSleep, guardedEcho],
      plugins: [askForGuarded],
    });
  });
  afterAll(async () => h?.stop());

  it('runs a step of quick calls in its model step: no tool step activity, the same events, a true mirror', async () => {
    const handle = await h.start('quick-steps');
    await handle.signal(followupSignal, { content: 'two quick steps' });
    const events = await waitForTurnEnd(h.store, 'quick-steps', 1);
    expect(turnEnds(events)).toEqual(['1:completed']);
    // Each tool step: its calls started, answered in model order, and the step ended once.
    expect(results(events)).toEqual(['q1:ok', 'q2:ok', 'q1:ok', 'q2:ok']);
    expect(events.filter((e) => e.type === 'step/end').map((e) => (e.type === 'step/end' ? e.step : 0))).toEqual([
      1, 2, 3,
    ]);
    // One activity per step; the turn's end is logged by a local activity in the workflow task that read the answer.
    expect(await scheduledActivities(handle)).toEqual(['modelStep', 'modelStep', 'modelStep']);
    await expectProviderSawTheLog(h, ['quick-steps']);
    expect((await checkHistoryMirror(h.client, h.store, 'quick-steps')).problem).toBeNull();
  });

  it("commits a step's boundary at once, and a read-only quick call's start with its result", async () => {
    const appends: string[][] = [];
    const append = h.store.append.bind(h.store);
    h.store.append = (sessionId, expectedSeq, events) => {
      if (sessionId === 'quick-commits') appends.push(events.map((e) => e.type));
      return append(sessionId, expectedSeq, events);
    };
    try {
      const handle = await h.start('quick-commits');
      await handle.signal(followupSignal, { content: 'count the commits' });
      await waitForTurnEnd(h.store, 'quick-commits', 1);
    } finally {
      h.store.append = append;
    }
    // The message's enqueue is logged by whichever writer gets there first (the workflow's appendInbox or the
    // step's boundary), so it is left out here.
    const logged = appends
      .map((types) => types.filter((t) => t !== 'inbox/enqueue'))
      .filter((types) => types.length > 0 && !types.includes('session/start'));
    expect(logged, JSON.stringify(appends)).toEqual([
      // The first step's boundary (the message, the turn's start, its claim, the step's start, the header) in
      // one append before the gate reads it; the wire digest only once the gate passed.
      ['turn/start', 'inbox/claim', 'step/start', 'user/message', 'request/header'],
      ['request/sent'],
      ['assistant/message'],
      // echo is quick and read-only: each call's start rides with its result (the last with the step's end).
      ['tool/start', 'tool/result'],
      ['tool/start', 'tool/result', 'step/end'],
      ['step/start'],
      ['request/sent'],
      ['assistant/message', 'step/end'],
      ['turn/end'],
    ]);
  });

  it('leaves a step with a call that is not quick to the tool step activity', async () => {
    const handle = await h.start('mixed-step');
    await handle.signal(followupSignal, { content: 'mixed step' });
    const events = await waitForTurnEnd(h.store, 'mixed-step', 1);
    expect(turnEnds(events)).toEqual(['1:completed']);
    expect(results(events)).toEqual(['m1:ok', 'm2:ok']);
    expect((await scheduledActivities(handle)).filter((a) => a === 'toolStep')).toHaveLength(1);
    expect((await checkHistoryMirror(h.client, h.store, 'mixed-step')).problem).toBeNull();
  });

  it('an interrupt while its calls run: the started call interrupted, the next skipped, the answer still counted', async () => {
    const handle = await h.start('quick-interrupt');
    await handle.signal(followupSignal, { content: 'slow quick tool' });
    await waitForState(handle, (s) => s.status === 'running' && s.step === 1);
    for (let i = 0; i < 100 && !(await h.store.read('quick-interrupt')).some((e) => e.type === 'tool/start'); i++)
      await new Promise((r) => setTimeout(r, 100));
    await handle.signal(interruptSignal);
    const events = await waitForTurnEnd(h.store, 'quick-interrupt', 1);
    expect(results(events)).toEqual(['s1:interrupted', 's2:skipped']);
    expect(turnEnds(events)).toEqual(['1:aborted']);
    expect(await scheduledActivities(handle)).not.toContain('toolStep');
    // The workflow's count of the session's usage is what the log's answers spent: the interrupted
    // activity handed back the usage of the answer it had logged.
    const logged = emptyUsage();
    for (const e of events) if (e.type === 'assistant/message') addUsage(logged, e.usage);
    expect(logged.output).toBeGreaterThan(0);
    const state = await waitForState(handle, (s) => s.status === 'idle');
    expect(state.usage).toEqual(logged);
    await expectProviderSawTheLog(h, ['quick-interrupt']);
    expect((await checkHistoryMirror(h.client, h.store, 'quick-interrupt')).problem).toBeNull();
  });

  it('a call that asks for approval pauses the model step; the decision runs it in a tool step activity', async () => {
    const handle = await h.start('quick-approval');
    await handle.signal(followupSignal, { content: 'ask first' });
    const waiting = await waitForState(handle, (s) => s.pendingApproval !== null);
    expect(waiting.pendingApproval).toMatchObject({ callId: 'g1', reason: 'ask-for-guarded: guarded' });
    await handle.executeUpdate(approveUpdate, { args: [{ callId: 'g1', decision: 'approve', by: 'test' }] });
    const events = await waitForTurnEnd(h.store, 'quick-approval', 1);
    expect(results(events)).toEqual(['g1:ok']);
    expect(turnEnds(events)).toEqual(['1:completed']);
    expect((await scheduledActivities(handle)).filter((a) => a === 'toolStep')).toHaveLength(1);
    expect((await handle.query(stateQuery)).status).toBe('idle');
    expect((await checkHistoryMirror(h.client, h.store, 'quick-approval')).problem).toBeNull();
  });
});
