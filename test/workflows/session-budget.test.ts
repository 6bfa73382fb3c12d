// A spent session budget on the real stack: each waking message after it gets one refused turn (ended
// `budget`, its batch claimed so it leaves the queue), the session goes idle instead of spinning, and a
// resume after close does not reset the count.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/core/index.js';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import { closeSignal, followupSignal } from '../../src/shared/session-messages.js';
import { startHarness, waitForState, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';

const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [`${e.turn}:${e.reason}:${e.error?.code ?? '-'}`] : []));

describe('a spent session budget', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ script: { replies: [{ text: 'the only answer this session can afford', repeat: 5 }] } });
  });
  afterAll(async () => h?.stop());

  it('refuses each later turn once, consuming the message that woke it, and leaves the session idle', async () => {
    const handle = await h.start('spent', { maxSessionSteps: 1 });
    await handle.signal(followupSignal, { content: 'first' });
    await waitForTurnEnd(h.store, 'spent', 1);
    await handle.signal(followupSignal, { content: 'second' });
    const events = await waitForTurnEnd(h.store, 'spent', 2);
    expect(turnEnds(events)).toEqual(['1:completed:-', '2:budget:SESSION_BUDGET_SPENT']);
    // The refused turn claimed its message: nothing waits, so nothing wakes the session again.
    const refused = events.filter((e) => e.type !== 'inbox/enqueue' && 'turn' in e && e.turn === 2);
    expect(refused.map((e) => e.type)).toEqual(['turn/start', 'inbox/claim', 'turn/end']);
    await waitForState(handle, (s) => s.status === 'idle' && s.lastTurnEnd?.turn === 2);
    const length = (await handle.fetchHistory()).events?.length ?? 0;
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect((await handle.fetchHistory()).events?.length, 'the history must not grow while idle').toBe(length);

    await handle.signal(followupSignal, { content: 'third' });
    const after = await waitForTurnEnd(h.store, 'spent', 3);
    expect(turnEnds(after).slice(2)).toEqual(['3:budget:SESSION_BUDGET_SPENT']);
    // The log holds turn/end before the workflow has taken closeTurn's result: wait for the state to catch up.
    const state = await waitForState(handle, (s) => s.status === 'idle' && s.lastTurnEnd?.turn === 3);
    expect(state.lastTurnEnd).toMatchObject({ turn: 3, reason: 'budget', errorCode: 'SESSION_BUDGET_SPENT' });
    expect(h.provider.requests().filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(1);
    expect((await checkHistoryMirror(h.client, h.store, 'spent')).ok).toBe(true);
  });

  it('a resumed session keeps counting its budget, and its state view, from the log', async () => {
    const first = await h.start('resumed', { maxSessionSteps: 2 });
    await first.signal(followupSignal, { content: 'one' });
    await waitForTurnEnd(h.store, 'resumed', 1);
    await first.signal(closeSignal);
    await first.result();
    // A new run over the same log, as `dh resume` starts it: no carry.
    const second = await h.start('resumed', { maxSessionSteps: 2 });
    // Until its openSession returns, a new run knows nothing; then it reports the session from the log.
    const opened = await waitForState(second, (s) => s.lastTurnEnd !== null);
    expect(opened.lastTurnEnd).toMatchObject({ turn: 1, reason: 'completed' });
    expect(opened.usage.output).toBeGreaterThan(0);
    await second.signal(followupSignal, { content: 'two' });
    await waitForTurnEnd(h.store, 'resumed', 2);
    await second.signal(followupSignal, { content: 'three' });
    const events = await waitForTurnEnd(h.store, 'resumed', 3);
    expect(turnEnds(events)).toEqual(['1:completed:-', '2:completed:-', '3:budget:SESSION_BUDGET_SPENT']);
  });
});
