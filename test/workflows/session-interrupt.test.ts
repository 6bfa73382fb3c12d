// Interrupts, downgraded wakes, budgets and close, on a real Temporal server. Every scenario ends
// with the provider/log check and the history mirror check.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeSignal, followupSignal, interruptSignal, sendUpdate } from '../../src/shared/session-messages.js';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import { SessionClient } from '../../src/client/session-client.js';
import type { SessionEvent } from '../../src/core/index.js';
import { echoTool, sleepTool } from '../helpers/test-tools.js';
import {
  expectProviderSawTheLog,
  startHarness,
  waitForState,
  waitForTurnEnd,
  type Harness,
} from '../helpers/session-harness.js';

const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [`${e.turn}:${e.reason}`] : []));

describe('interrupts, budgets and close on a real Temporal server', () => {
  let h: Harness;
  const runLog = join(mkdtempSync(join(tmpdir(), 'dh-runs-')), 'sleep.log');
  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          {
            // Minutes long, so only the interrupt ends it, however late the signal lands on a loaded machine.
            match: { lastUserContains: 'stream slowly' },
            text: 'word '.repeat(4000),
            chunkSize: 5,
            chunkDelayMs: 50,
            repeat: 2,
          },
          {
            match: { lastUserContains: 'long tool' },
            toolCalls: [
              { id: 't1', name: 'sleep', arguments: '{"ms":20000}' },
              { id: 't2', name: 'echo', arguments: '{"text":"x"}' },
            ],
          },
          { match: { lastUserContains: 'after the interrupt' }, text: 'fresh turn', repeat: 3 },
          {
            // Minutes long, so only the interrupt ends this step. At 10 s it could finish first under load: the
            // interrupt then landed while the turn was closing (still running, step 1) and it completed.
            match: { lastUserContains: 'long stream to interrupt' },
            text: 'word '.repeat(4000),
            chunkSize: 5,
            chunkDelayMs: 50,
          },
          { match: { lastUserContains: 'first in line' }, text: 'fresh turn after the claim' },
          { match: { lastUserContains: 'steer slowly' }, text: 'steered', delayMs: 2000 },
          { match: { lastUserContains: 'second steer' }, text: 'steered again' },
          {
            match: { lastUserContains: 'loop' },
            toolCalls: [{ id: 'l1', name: 'echo', arguments: '{"text":"loop"}' }],
            repeat: 6,
          },
          { match: { lastUserContains: 'bye' }, text: 'goodbye', repeat: 3 },
          {
            match: { lastUserContains: 'spend tokens' },
            toolCalls: [{ id: 'k1', name: 'echo', arguments: '{"text":"k"}' }],
          },
        ],
      },
      tools: [echoTool, sleepTool(runLog)],
    });
  });
  afterAll(async () => h?.stop());

  it('interrupt during streaming: partial output logged as interrupted, the turn ends aborted, quickly', async () => {
    const handle = await h.start('int-stream');
    await handle.signal(followupSignal, { content: 'stream slowly' });
    await new Promise((r) => setTimeout(r, 1500));
    const sentAt = Date.now();
    await handle.signal(interruptSignal);
    const events = await waitForTurnEnd(h.store, 'int-stream', 1);
    const latencyMs = Date.now() - sentAt;
    const answer = events.find((e) => e.type === 'assistant/message');
    expect(answer).toMatchObject({ interrupted: true });
    expect(
      answer?.type === 'assistant/message' &&
        answer.content &&
        answer.content.length > 0 &&
        answer.content.length < 1000,
    ).toBe(true);
    expect(turnEnds(events)).toEqual(['1:aborted']);
    console.log(`interrupt latency (signal → turn/end in the log): ${latencyMs} ms`);
    expect(latencyMs).toBeLessThan(10_000); // a liveness bound, not a benchmark
    await expectProviderSawTheLog(h, ['int-stream']);
    expect((await checkHistoryMirror(h.client, h.store, 'int-stream')).problem).toBeNull();
  });

  it('interrupt during a tool: the started call is answered interrupted, the unstarted one skipped', async () => {
    const handle = await h.start('int-tool');
    await handle.signal(followupSignal, { content: 'long tool' });
    await waitForState(handle, (s) => s.status === 'running' && s.step === 1);
    for (let i = 0; i < 50 && !(await h.store.read('int-tool')).some((e) => e.type === 'tool/start'); i++)
      await new Promise((r) => setTimeout(r, 100));
    await handle.signal(interruptSignal);
    const events = await waitForTurnEnd(h.store, 'int-tool', 1);
    const results = events.flatMap((e) => (e.type === 'tool/result' ? [`${e.callId}:${e.status}`] : []));
    expect(results).toEqual(['t1:interrupted', 't2:skipped']);
    expect(turnEnds(events)).toEqual(['1:aborted']);
    await expectProviderSawTheLog(h, ['int-tool']);
    expect((await checkHistoryMirror(h.client, h.store, 'int-tool')).problem).toBeNull();
  });

  it('a steer arriving while the turn dies is downgraded and starts a fresh turn once idle; an inject is not', async () => {
    const handle = await h.start('downgrade');
    await handle.signal(followupSignal, { content: 'stream slowly' });
    await new Promise((r) => setTimeout(r, 1200));
    await handle.signal(interruptSignal);
    const receipt = await handle.executeUpdate(sendUpdate, {
      args: [{ content: 'after the interrupt, do this', target: 'next-step', wakeup: true }],
    });
    const events = await waitForTurnEnd(h.store, 'downgrade', 2);
    if (receipt.downgraded) {
      expect(receipt.target).toBe('next-turn');
      expect(events.some((e) => e.type === 'inbox/downgrade' && e.messageId === receipt.messageId)).toBe(true);
    }
    expect(turnEnds(events)).toEqual(['1:aborted', '2:completed']);
    const turn2 = events
      .filter((e) => e.type === 'user/message' && e.turn === 2)
      .map((e) => (e.type === 'user/message' ? e.content : ''));
    expect(turn2).toEqual(['after the interrupt, do this']);
    expect(receipt.downgraded).toBe(true);
    await expectProviderSawTheLog(h, ['downgrade']);
  });

  it('a downgraded send first in line gets position 0: the message the interrupted step claimed is not ahead of it', async () => {
    const handle = await h.start('position-downgraded');
    await handle.signal(followupSignal, { content: 'long stream to interrupt' });
    await waitForState(handle, (s) => s.status === 'running' && s.step === 1);
    await handle.signal(interruptSignal);
    // Sent right after the interrupt: the turn stays aborting until the streaming step has seen the
    // cancellation (a heartbeat) and the turn is closed (an activity), long after this send lands.
    const receipt = await handle.executeUpdate(sendUpdate, {
      args: [{ content: 'first in line', target: 'next-step', wakeup: true }],
    });
    expect(receipt).toMatchObject({ downgraded: true, target: 'next-turn', position: 0, duplicate: false });
    const events = await waitForTurnEnd(h.store, 'position-downgraded', 2);
    expect(turnEnds(events)).toEqual(['1:aborted', '2:completed']);
    const turn2 = events.flatMap((e) => (e.type === 'user/message' && e.turn === 2 ? [e.content] : []));
    expect(turn2).toEqual(['first in line']); // nothing was ahead of it
    await expectProviderSawTheLog(h, ['position-downgraded']);
  });

  it('a steer while a step runs, with nothing else waiting, gets position 0 (the step claimed the steer that started it)', async () => {
    const sessions = new SessionClient(h.client, { taskQueue: h.taskQueue });
    const handle = await h.start('position-steer');
    // A steer on an idle session starts the turn; its step claims it and runs for two seconds.
    const first = await sessions.send('position-steer', { content: 'steer slowly', target: 'next-step', wakeup: true });
    expect(first).toMatchObject({ position: 0, downgraded: false });
    await waitForState(handle, (s) => s.status === 'running' && s.step === 1);
    const second = await sessions.send('position-steer', {
      content: 'second steer',
      target: 'next-step',
      wakeup: true,
    });
    expect(second).toMatchObject({ position: 0, target: 'next-step', downgraded: false });
    const events = await waitForTurnEnd(h.store, 'position-steer', 1);
    // It arrived while step 1 ran: it rides step 2 of the same turn.
    const steps = events.flatMap((e) => (e.type === 'user/message' ? [[e.turn, e.step, e.content]] : []));
    expect(steps).toEqual([
      [1, 1, 'steer slowly'],
      [1, 2, 'second steer'],
    ]);
    expect(turnEnds(events)).toEqual(['1:completed']);
    await expectProviderSawTheLog(h, ['position-steer']);
  });

  it('max steps per turn ends the turn with max-steps; a token budget ends it with budget', async () => {
    const handle = await h.start('budget', { maxStepsPerTurn: 3 });
    await handle.signal(followupSignal, { content: 'loop' });
    const events = await waitForTurnEnd(h.store, 'budget', 1);
    expect(turnEnds(events)).toEqual(['1:max-steps']);
    expect(events.filter((e) => e.type === 'step/start')).toHaveLength(3);
    const tokens = await h.start('budget-tokens', { maxTurnTokens: 1 });
    await tokens.signal(followupSignal, { content: 'spend tokens' });
    const after = await waitForTurnEnd(h.store, 'budget-tokens', 1);
    expect(turnEnds(after)).toEqual(['1:budget']);
    expect(after.filter((e) => e.type === 'step/start')).toHaveLength(1);
    await expectProviderSawTheLog(h, ['budget', 'budget-tokens']);
  });

  it('close finishes the current turn and completes the workflow; a later send is a clear error', async () => {
    const handle = await h.start('close');
    await handle.signal(followupSignal, { content: 'bye' });
    await handle.signal(closeSignal);
    const result = await handle.result();
    expect(result).toMatchObject({ sessionId: 'close', turns: 1, closedBy: 'close' });
    const events = await h.store.read('close');
    expect(turnEnds(events)).toEqual(['1:completed']);
    const sessions = new SessionClient(h.client, { taskQueue: h.taskQueue });
    await expect(sessions.followup('close', 'anyone?')).rejects.toMatchObject({ code: 'SESSION_CLOSED' });
    await expectProviderSawTheLog(h, ['close']);
    expect((await checkHistoryMirror(h.client, h.store, 'close')).ok).toBe(true);
  });

  it('the client starts and sends in one call (update-with-start), and the session runs', async () => {
    const sessions = new SessionClient(h.client, { taskQueue: h.taskQueue });
    const receipt = await sessions.send(
      'with-start',
      { content: 'bye', target: 'next-turn', wakeup: true },
      { start: true },
    );
    expect(receipt).toMatchObject({ position: 0, duplicate: false });
    await waitForTurnEnd(h.store, 'with-start', 1);
    await sessions.steer('with-start-2', 'bye', { start: true });
    await waitForTurnEnd(h.store, 'with-start-2', 1);
    expect(readFileSync(runLog, 'utf8').split('\n').filter(Boolean)).toEqual(['t1']); // the interrupted sleep ran once
  });
});
