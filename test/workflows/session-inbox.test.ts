// Scenarios of the turn/step machine and the inbox on a real Temporal server, with the scripted
// provider and a SQLite store: followups, steers, injects, claims, pre-step rejection, duplicates.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import {
  followupSignal,
  injectSignal,
  sendUpdate,
  steerSignal,
  stateQuery,
} from '../../src/shared/session-messages.js';
import type { SessionEvent } from '../../src/core/index.js';
import { echoTool, sleepTool } from '../helpers/test-tools.js';
import {
  expectProviderSawTheLog,
  startHarness,
  waitForState,
  waitForTurnEnd,
  type Harness,
} from '../helpers/session-harness.js';

const userTexts = (events: readonly SessionEvent[], turn: number, step?: number) =>
  events
    .filter((e) => e.type === 'user/message' && e.turn === turn && (step === undefined || e.step === step))
    .map((e) => (e.type === 'user/message' ? e.content : null));
const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [`${e.turn}:${e.reason}`] : []));

describe('session inbox on a real Temporal server', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'first' }, text: 'one' },
          { match: { lastUserContains: 'second' }, text: 'two' },
          { match: { lastUserContains: 'third' }, text: 'three' },
          {
            match: { lastUserContains: 'use a tool' },
            toolCalls: [{ id: 'c1', name: 'sleep', arguments: '{"ms":1500}' }],
          },
          { match: { lastUserContains: 'YAML' }, text: 'Switching to YAML.' },
          { match: { lastUserContains: 'slow answer' }, text: 'a slow answer', delayMs: 1500 },
          { match: { lastUserContains: 'branch is main' }, text: 'noted the branch' },
          { match: { lastUserContains: 'only inject' }, text: 'should never be asked' },
          { match: { lastUserContains: 'dup' }, text: 'once', repeat: 2 },
          {
            match: { lastUserContains: 'echo please' },
            toolCalls: [{ id: 'e1', name: 'echo', arguments: '{"text":"hi"}' }],
          },
          { match: { lastUserContains: 'echo please' }, text: 'echoed' },
          { match: { lastUserContains: 'still alive' }, text: 'yes' },
        ],
      },
      tools: [echoTool, sleepTool(join(process.env.TMPDIR ?? '/tmp', `dh-sleep-${process.pid}.log`))],
    });
  });
  afterAll(async () => h?.stop());

  it('three followups become three turns, in order', async () => {
    const handle = await h.start('followups');
    await handle.signal(followupSignal, { content: 'first' });
    await handle.signal(followupSignal, { content: 'second' });
    await handle.signal(followupSignal, { content: 'third' });
    const events = await waitForTurnEnd(h.store, 'followups', 3);
    expect(turnEnds(events)).toEqual(['1:completed', '2:completed', '3:completed']);
    expect([1, 2, 3].map((t) => userTexts(events, t))).toEqual([['first'], ['second'], ['third']]);
    const answers = events.flatMap((e) => (e.type === 'assistant/message' ? [e.content] : []));
    expect(answers).toEqual(['one', 'two', 'three']);
    await expectProviderSawTheLog(h, ['followups']);
  });

  it('a steer sent mid-turn lands at the next step of the same turn', async () => {
    const handle = await h.start('steer');
    await handle.signal(followupSignal, { content: 'use a tool' });
    await waitForState(handle, (s) => s.status === 'running' && s.step === 1);
    await new Promise((r) => setTimeout(r, 400)); // the tool is running now
    await handle.signal(steerSignal, { content: 'Use YAML, not JSON.' });
    const events = await waitForTurnEnd(h.store, 'steer', 1);
    expect(turnEnds(events)).toEqual(['1:completed']);
    expect(userTexts(events, 1, 2)).toEqual(['Use YAML, not JSON.']);
    expect(events.filter((e) => e.type === 'turn/start')).toHaveLength(1);
    await expectProviderSawTheLog(h, ['steer']);
  });

  it('an inject rides the next step and never starts a turn by itself', async () => {
    const handle = await h.start('inject-idle');
    await handle.signal(injectSignal, { content: 'only inject', source: 'ci-bot' });
    await waitForState(handle, (s) => s.queues.notYetLogged === 0 && s.queues.nextStep === 1);
    await new Promise((r) => setTimeout(r, 1000));
    const events = await h.store.read('inject-idle');
    expect(events.map((e) => e.type)).toEqual(['session/start', 'inbox/enqueue']);
    expect((await handle.query(stateQuery)).status).toBe('idle');
    // The next followup's turn claims the waiting inject too: followup first, then the inject.
    await handle.signal(followupSignal, { content: 'first' });
    const after = await waitForTurnEnd(h.store, 'inject-idle', 1);
    expect(userTexts(after, 1, 1)).toEqual(['first', 'only inject']);
    await expectProviderSawTheLog(h, ['inject-idle']);
  });

  it('an inject during the last step of a turn keeps the turn open for one more step', async () => {
    const handle = await h.start('inject-last');
    await handle.signal(followupSignal, { content: 'slow answer' });
    await waitForState(handle, (s) => s.status === 'running');
    await handle.signal(injectSignal, { content: 'The branch is main.', source: 'git-hook' });
    const events = await waitForTurnEnd(h.store, 'inject-last', 1);
    expect(userTexts(events, 1, 2)).toEqual(['The branch is main.']);
    expect(events.filter((e) => e.type === 'step/start' && e.turn === 1)).toHaveLength(2);
    await expectProviderSawTheLog(h, ['inject-last']);
  });

  it('a duplicate message id is queued once; the update answers at once with id and position', async () => {
    const handle = await h.start('dup');
    const first = await handle.executeUpdate(sendUpdate, {
      args: [{ messageId: 'm-1', content: 'dup', target: 'next-turn', wakeup: true }],
    });
    const again = await handle.executeUpdate(sendUpdate, {
      args: [{ messageId: 'm-1', content: 'dup', target: 'next-turn', wakeup: true }],
    });
    await handle.signal(followupSignal, { messageId: 'm-1', content: 'dup' });
    expect(first).toMatchObject({ messageId: 'm-1', duplicate: false, target: 'next-turn' });
    expect(again).toMatchObject({ messageId: 'm-1', duplicate: true });
    await waitForTurnEnd(h.store, 'dup', 1);
    await new Promise((r) => setTimeout(r, 500));
    const events = await h.store.read('dup');
    expect(events.filter((e) => e.type === 'inbox/enqueue')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'turn/start')).toHaveLength(1);
    await expectProviderSawTheLog(h, ['dup']);
  });

  it('the update validator rejects bad input before it reaches history; invalid signals are counted, not fatal', async () => {
    const handle = await h.start('bad-input');
    await expect(
      handle.executeUpdate(sendUpdate, { args: [{ content: '', target: 'sideways', wakeup: true } as never] }),
    ).rejects.toMatchObject({
      cause: { message: expect.stringMatching(/^invalid send: /), type: 'INVALID_PAYLOAD' },
    });
    await handle.signal(followupSignal, { content: 42 });
    await handle.signal(steerSignal, { text: 'wrong field' });
    const state = await waitForState(handle, (s) => s.rejectedSignals === 2);
    expect(state.lastRejection).toMatch(/^steer: /);
    const history = await handle.fetchHistory();
    const updates = (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
    expect(updates).toHaveLength(0);
    await handle.signal(followupSignal, { content: 'still alive?' });
    await waitForTurnEnd(h.store, 'bad-input', 1);
    await expectProviderSawTheLog(h, ['bad-input']);
  });

  it('a tool call round trip: the model calls echo, sees the result, answers', async () => {
    const handle = await h.start('echo');
    await handle.signal(followupSignal, { content: 'echo please' });
    const events = await waitForTurnEnd(h.store, 'echo', 1);
    expect(events.map((e) => e.type)).toEqual([
      'session/start',
      'inbox/enqueue',
      'turn/start',
      'inbox/claim',
      'step/start',
      'user/message',
      'request/header',
      'request/sent',
      'assistant/message',
      'tool/start',
      'tool/result',
      'step/end',
      'step/start',
      'request/sent',
      'assistant/message',
      'step/end',
      'turn/end',
    ]);
    expect(events.find((e) => e.type === 'tool/result')).toMatchObject({ status: 'ok', output: 'echo: "hi"' });
    await expectProviderSawTheLog(h, ['echo']);
  });
});
