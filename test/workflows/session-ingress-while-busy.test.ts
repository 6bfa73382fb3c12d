// Messages accepted while a step runs reach the log while it runs (the concurrent appendInbox), on a real
// Temporal server with the scripted provider holding the answer's stream mid-way until the test lets it go:
// the log shows them queued before the answer, the request already sent is not touched, the steer enters the
// next step and the followup the next turn, each exactly once; and so for 100 sessions at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import type { SessionEvent } from '../../src/core/index.js';
import { approvalPolicyPlugin } from '../../src/plugins/basic-plugins.js';
import { approveUpdate, followupSignal, steerSignal } from '../../src/shared/session-messages.js';
import { echoTool } from '../helpers/test-tools.js';
import { waitForLog } from '../helpers/scenario-runtime.js';
import {
  expectProviderSawTheLog,
  startHarness,
  waitForState,
  waitForTurnEnd,
  type Harness,
} from '../helpers/session-harness.js';

const SESSIONS = 100;
const holdKey = (sessionId: string) => `answer-of-${sessionId}`;

const seqOf = (events: readonly SessionEvent[], match: (e: SessionEvent) => boolean): number =>
  events.find(match)?.seq ?? -1;

/** What a reader of the log needs to see: each message enqueued once, before the answer it arrived during. */
function expectLoggedDuringTheStep(events: readonly SessionEvent[], messageIds: readonly string[]): void {
  const answer = seqOf(events, (e) => e.type === 'assistant/message' && e.turn === 1 && e.step === 1);
  expect(answer).toBeGreaterThan(0);
  for (const messageId of messageIds) {
    const enqueued = events.filter((e) => e.type === 'inbox/enqueue' && e.messageId === messageId);
    expect(enqueued, messageId).toHaveLength(1);
    expect(enqueued[0]?.seq, `${messageId} logged before the answer`).toBeLessThan(answer);
    expect(
      events.filter((e) => e.type === 'user/message' && e.messageId === messageId),
      messageId,
    ).toHaveLength(1);
  }
}

describe('messages accepted while a step runs are logged while it runs', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'hold the answer' },
            text: 'a long answer that streams in many small chunks',
            chunkSize: 4,
            hold: { afterChunks: 2, key: 'answer-of-busy-one' },
          },
          { match: { lastUserContains: 'steer while busy' }, text: 'steered' },
          { match: { lastUserContains: 'followup while busy' }, text: 'followed up' },
          ...Array.from({ length: SESSIONS }, (_, i) => ({
            match: { lastUserContains: `hold session ${i} ` },
            text: `answer ${i} streamed in small chunks`,
            chunkSize: 4,
            hold: { afterChunks: 1, key: holdKey(`busy-many-${i}`) },
          })),
          { match: { lastUserContains: 'steer of' }, text: 'steered', repeat: SESSIONS },
          {
            match: { lastUserContains: 'echo after approval' },
            toolCalls: [{ id: 'e1', name: 'echo', arguments: { text: 'hi' } }],
          },
          { match: { lastUserContains: 'steer during the approval' }, text: 'approved and steered' },
        ],
      },
      tools: [echoTool],
      plugins: [approvalPolicyPlugin({ ask: ['echo'] })],
      // The answers are held on purpose until the test lets them go, which on a loaded machine (100 sessions at
      // once) takes longer than the watchdog for a silent provider: it would cut the held stream and retry it.
      idleTimeoutMs: 120_000,
    });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('logs a steer and a followup before the held answer; the sent request stays as it was', async () => {
    const id = 'busy-one';
    const handle = await h.start(id);
    await handle.signal(followupSignal, { content: 'hold the answer', messageId: 'first' });
    await waitForLog(h.store, id, (log) => log.some((e) => e.type === 'request/sent'), 'the request sent');
    await handle.signal(steerSignal, { content: 'steer while busy', messageId: 'steer' });
    await handle.signal(followupSignal, { content: 'followup while busy', messageId: 'followup' });

    // The answer is held mid-stream: nothing but the two messages can have been logged meanwhile.
    const during = await waitForLog(
      h.store,
      id,
      (log) => ['steer', 'followup'].every((m) => log.some((e) => e.type === 'inbox/enqueue' && e.messageId === m)),
      'both messages logged while the answer is held',
    );
    expect(during.some((e) => e.type === 'assistant/message')).toBe(false);
    const sentAt = seqOf(during, (e) => e.type === 'request/sent');
    expect(during.slice(sentAt + 1).map((e) => e.type)).toEqual(['inbox/enqueue', 'inbox/enqueue']);
    const bodiesBefore = h.provider.requests().filter((r) => r.path.endsWith('/chat/completions')).length;

    h.provider.release(holdKey(id));
    const events = await waitForTurnEnd(h.store, id, 2);
    expectLoggedDuringTheStep(events, ['steer', 'followup']);
    expect(events.find((e) => e.type === 'user/message' && e.messageId === 'steer')).toMatchObject({
      turn: 1,
      step: 2,
    });
    expect(events.find((e) => e.type === 'user/message' && e.messageId === 'followup')).toMatchObject({
      turn: 2,
      step: 1,
    });

    // Step 1's request was sent once, and step 2's extends it: the queued messages changed no prefix.
    const bodies = h.provider
      .requests()
      .filter((r) => r.path.endsWith('/chat/completions'))
      .map((r) => JSON.parse(r.body) as { messages: unknown[] });
    const mine = bodies.slice(bodiesBefore - 1);
    const [step1, step2] = mine;
    expect(JSON.stringify(step1?.messages)).not.toContain('steer while busy');
    expect(step2?.messages.slice(0, step1?.messages.length)).toEqual(step1?.messages);
    await expectProviderSawTheLog(h, [id]);
    const mirror = await checkHistoryMirror(h.client, h.store, id);
    expect(mirror.problem).toBeNull();
  });

  it('logs a steer that arrives while the turn waits for an approval, before the decision', async () => {
    const id = 'busy-approval';
    const handle = await h.start(id);
    await handle.signal(followupSignal, { content: 'echo after approval' });
    await waitForState(handle, (s) => s.pendingApproval !== null);
    await handle.signal(steerSignal, { content: 'steer during the approval', messageId: 'steer-approval' });
    const during = await waitForLog(
      h.store,
      id,
      (log) => log.some((e) => e.type === 'inbox/enqueue' && e.messageId === 'steer-approval'),
      'the steer logged while the approval waits',
    );
    expect(during.some((e) => e.type === 'approval/decision')).toBe(false);
    await handle.executeUpdate(approveUpdate, { args: [{ callId: 'e1', decision: 'approve' }] });
    const events = await waitForTurnEnd(h.store, id, 1);
    expect(events.filter((e) => e.type === 'inbox/enqueue' && e.messageId === 'steer-approval')).toHaveLength(1);
    expect(events.find((e) => e.type === 'user/message' && e.messageId === 'steer-approval')).toMatchObject({
      turn: 1,
      step: 2,
    });
  });

  it(`does so for ${SESSIONS} sessions at once, each steer once and before its answer`, async () => {
    const ids = Array.from({ length: SESSIONS }, (_, i) => `busy-many-${i}`);
    await Promise.all(
      ids.map(async (id, i) => {
        const handle = await h.start(id);
        await handle.signal(followupSignal, { content: `hold session ${i} please` });
        await waitForLog(h.store, id, (log) => log.some((e) => e.type === 'request/sent'), 'the request', 120_000);
        await handle.signal(steerSignal, { content: `steer of ${i}`, messageId: `steer-${i}` });
        const during = await waitForLog(
          h.store,
          id,
          (log) => log.some((e) => e.type === 'inbox/enqueue' && e.messageId === `steer-${i}`),
          'the steer logged while the answer is held',
          120_000,
        );
        expect(
          during.some((e) => e.type === 'assistant/message'),
          id,
        ).toBe(false);
        h.provider.release(holdKey(id));
        expectLoggedDuringTheStep(await waitForTurnEnd(h.store, id, 1, 120_000), [`steer-${i}`]);
      }),
    );
    await expectProviderSawTheLog(h, ids);
  }, 300_000);
});
