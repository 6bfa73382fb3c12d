// Which attempt's live output a viewer shows when a model step leaves its host's model queue for the shared
// one: the step runs again as a new activity whose attempt is 1 again, published later. The follower must
// void the dead attempt's text (`restart`) and never drop the new activity's output as stale, whatever
// attempt the host had reached; the same for a tool call's progress; rows of earlier writers (no schedule
// time) still order by attempt number.
import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/core/index.js';
import { compareAttempts } from '../../src/streaming/attempt-order.js';
import { coalesce, type LiveDeltaDraft } from '../../src/streaming/delta-channel.js';
import { MemoryDeltaChannel } from '../../src/streaming/memory-delta-channel.js';
import { SessionFollower, type FollowOp, type FollowedLog } from '../../src/streaming/session-follower.js';
import { assistantMessage, event, sessionStart, stepStart, T0 } from '../helpers/event-builders.js';

const SESSION = 'fallback';

/** An append-only array read as the follower reads a store. */
function arrayLog(events: SessionEvent[]): FollowedLog {
  return { read: (_id, from = 0) => Promise.resolve(events.slice(from)) };
}

/** The host's attempts are scheduled at HOST + n; the shared queue's, after the host's bound ran out. */
const HOST = T0;
const SHARED = T0 + 16_000;

function text(attempt: number, attemptScheduledAt: number | undefined, chunk: string): LiveDeltaDraft {
  return {
    sessionId: SESSION,
    turn: 1,
    step: 1,
    attempt,
    ...(attemptScheduledAt !== undefined ? { attemptScheduledAt } : {}),
    kind: 'text',
    text: chunk,
    at: T0,
  };
}

/** What a consumer makes of the ops: `↻n` for a restart by attempt n, then the text; answers as `=rest`. */
function summary(ops: readonly FollowOp[]): string[] {
  return ops.flatMap((op) => {
    if (op.type === 'text') return [`${op.restart ? `↻${op.attempt} ` : ''}${op.text}`];
    if (op.type === 'answer') return [`=${op.rest}${op.replaced ? ' (replaced)' : ''}`];
    if (op.type === 'tool-progress') return [`${op.callId} ${op.progress}/${op.total ?? '-'} ${op.message ?? ''}`];
    return [];
  });
}

/** A session whose step 1.1 has started, a follower at its start, and the channel its rows go to. */
async function streamingStep(): Promise<{
  events: SessionEvent[];
  channel: MemoryDeltaChannel;
  viewer: SessionFollower;
}> {
  const events = [sessionStart(SESSION), stepStart(1, 1, 1)];
  const channel = new MemoryDeltaChannel();
  const viewer = new SessionFollower(arrayLog(events), channel, SESSION);
  await viewer.poll();
  return { events, channel, viewer };
}

describe('live output of a step that moved from the host queue to the shared queue', () => {
  it('host attempt 1, then shared attempt 1: the shared output restarts the step, the answer continues it', async () => {
    const { events, channel, viewer } = await streamingStep();
    channel.publish(text(1, HOST, 'Cut sentence 20: naïv'));
    expect(summary(await viewer.poll())).toEqual(['Cut sentence 20: naïv']);

    channel.publish(text(1, SHARED, 'Again sentence 1. '));
    // A late row of the dead attempt (its buffer flushed by a zombie) changes nothing.
    channel.publish(text(1, HOST, 'e.'));
    expect(summary(await viewer.poll())).toEqual(['↻1 Again sentence 1. ']);

    events.push(assistantMessage(2, 1, 1, 'Again sentence 1. Again sentence 2.'));
    expect(summary(await viewer.poll())).toEqual(['=Again sentence 2.']);
  });

  it('host attempt 2, then shared attempt 1: the shared output is not stale, it restarts the step', async () => {
    const { events, channel, viewer } = await streamingStep();
    channel.publish(text(1, HOST, 'first try'));
    channel.publish(text(2, HOST + 11_000, 'second try'));
    expect(summary(await viewer.poll())).toEqual(['first try', '↻2 second try']);

    channel.publish(text(1, SHARED + 11_000, 'third '));
    channel.publish(text(1, SHARED + 11_000, 'try'));
    expect(summary(await viewer.poll())).toEqual(['↻1 third ', 'try']);

    events.push(assistantMessage(2, 1, 1, 'third try, answered'));
    expect(summary(await viewer.poll())).toEqual(['=, answered']);
  });

  it('gives a viewer that joins late, or resumes, the same restart', async () => {
    const { events, channel, viewer } = await streamingStep();
    channel.publish(text(2, HOST + 11_000, 'second try'));
    channel.publish(text(1, SHARED + 11_000, 'third'));
    const live = await viewer.poll();
    expect(summary(live)).toEqual(['second try', '↻1 third']);
    const late = new SessionFollower(arrayLog(events), channel, SESSION);
    expect(summary(await late.poll())).toEqual(['second try', '↻1 third']);
    const first = live[0];
    if (first === undefined) throw new Error('no first frame');
    const resumed = new SessionFollower(arrayLog(events), channel, SESSION, { from: first.position });
    expect(summary(await resumed.poll())).toEqual(['↻1 third']);
  });

  it("orders a tool call's progress by schedule: a tool step activity's attempt 1 after the model step's attempt 2", async () => {
    const events: SessionEvent[] = [
      sessionStart(SESSION),
      stepStart(1, 1, 1),
      event(
        {
          type: 'assistant/message',
          at: T0,
          turn: 1,
          step: 1,
          content: null,
          toolCalls: [{ id: 'c1', name: 'count_up', arguments: '{}' }],
          finishReason: 'tool_calls',
          usage: { inputUncached: 10, cacheRead: 0, output: 5, reasoning: 0 },
        },
        2,
      ),
      event({ type: 'tool/start', at: T0, turn: 1, step: 1, callId: 'c1', name: 'count_up' }, 3),
    ];
    const channel = new MemoryDeltaChannel();
    const viewer = new SessionFollower(arrayLog(events), channel, SESSION);
    const progress = (attempt: number, attemptScheduledAt: number, n: number): LiveDeltaDraft => ({
      ...text(attempt, attemptScheduledAt, `part ${n}`),
      kind: 'tool-progress',
      callId: 'c1',
      name: 'count_up',
      progress: n,
      total: 3,
    });
    // The quick call ran inside the model step's attempt 2 on the host, then in a tool step activity.
    channel.publish(progress(2, HOST + 11_000, 2));
    channel.publish(progress(1, SHARED + 20_000, 1));
    channel.publish(progress(2, HOST + 11_000, 3));
    expect(summary(await viewer.poll())).toEqual(['=', 'c1 2/3 part 2', 'c1 1/3 part 1']);
  });

  it('orders rows without a schedule time (earlier writers) by attempt number, as before', async () => {
    const { channel, viewer } = await streamingStep();
    channel.publish(text(1, undefined, 'one'));
    channel.publish(text(2, undefined, 'two'));
    channel.publish(text(1, undefined, 'stale'));
    expect(summary(await viewer.poll())).toEqual(['one', '↻2 two']);
    expect(compareAttempts({ attempt: 3 }, { attempt: 1, attemptScheduledAt: SHARED })).toBeGreaterThan(0);
    expect(compareAttempts({ attempt: 1, attemptScheduledAt: SHARED }, { attempt: 3, attemptScheduledAt: HOST })).toBe(
      SHARED - HOST,
    );
  });

  it("never merges two attempts' rows that share a number into one row", () => {
    const merged = coalesce([text(1, HOST, 'dead '), text(1, SHARED, 'new')]);
    expect(merged.map((d) => [d.text, d.attemptScheduledAt])).toEqual([
      ['dead ', HOST],
      ['new', SHARED],
    ]);
    const usage = (at: number): LiveDeltaDraft => ({ ...text(1, at, '{}'), kind: 'usage' });
    expect(coalesce([usage(HOST), usage(SHARED)])).toHaveLength(2);
  });
});
