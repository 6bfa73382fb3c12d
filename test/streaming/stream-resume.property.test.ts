// Resuming a stream from any frame's position: over generated sessions (steps streamed in attempts, some of
// them moved to the shared queue as a new activity whose attempt is 1 again, stale rows of superseded
// attempts, tool progress, usage, compaction) and a viewer polling at random moments, a consumer that drops
// after any frame and comes back with its position gets every logged event once, in order, and assembles
// exactly the logged answers; where no rows were compacted and no step was retried, nothing is ever
// replaced; and the live text of a step being streamed is always the latest attempt's, never a mix.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/core/index.js';
import type { SessionStore } from '../../src/stores/session-store.js';
import { compactBefore } from '../../src/streaming/live-stream-plugin.js';
import { MemoryDeltaChannel } from '../../src/streaming/memory-delta-channel.js';
import { SessionFollower, type StreamFrame } from '../../src/streaming/session-follower.js';
import { formatPosition, parsePosition, type StreamPosition } from '../../src/streaming/stream-position.js';
import { formatUsageRow } from '../../src/streaming/usage-row.js';
import { assistantMessage, event, sessionStart, stepStart } from '../helpers/event-builders.js';

const SESSION = 'resume';

/** The follower reads the log through `read` alone: an append-only array stands in for the store here. */
function arrayStore(events: SessionEvent[]): SessionStore {
  return { read: (_id: string, from = 0) => Promise.resolve(events.slice(from)) } as unknown as SessionStore;
}

interface StepPlan {
  /** Each attempt's streamed chunks; the last attempt's answer is the logged one. */
  readonly attempts: readonly (readonly string[])[];
  /** Text of the answer past what its attempt streamed (rows that never came: the rest completes it). */
  readonly tail: string;
  /** A stale row of the first attempt after a later one began (a zombie attempt still publishing). */
  readonly zombie: boolean;
  /**
   * Per later attempt: whether it ran as a new activity on the shared queue (its attempt number starts at 1
   * again) rather than as the next retry of the same activity.
   */
  readonly moved: readonly boolean[];
  /** Rows as an earlier writer wrote them: no schedule time, so no move (the number alone orders them). */
  readonly legacy: boolean;
  readonly usage: boolean;
  readonly toolCall: boolean;
}

const chunk = fc.string({ minLength: 1, maxLength: 4, unit: fc.constantFrom('a', 'b', 'c', ' ', 'é', '∑') });
const stepPlan = fc.record({
  attempts: fc.array(fc.array(chunk, { maxLength: 5 }), { minLength: 1, maxLength: 3 }),
  tail: fc.oneof(fc.constant(''), chunk),
  zombie: fc.boolean(),
  moved: fc.array(fc.boolean(), { minLength: 2, maxLength: 2 }),
  legacy: fc.boolean(),
  usage: fc.boolean(),
  toolCall: fc.boolean(),
});

type Action =
  | { kind: 'row'; run: () => void }
  | { kind: 'log'; event: (seq: number) => SessionEvent }
  | { kind: 'prune'; turn: number; step: number };

/** Each attempt's number and schedule time: a retry counts up, a move to the shared queue counts from 1. */
function attemptTags(plan: StepPlan, step: number): { attempt: number; attemptScheduledAt?: number }[] {
  const tags: { attempt: number; attemptScheduledAt?: number }[] = [];
  plan.attempts.forEach((_, a) => {
    const previous = tags.at(-1)?.attempt ?? 0;
    const attempt = a > 0 && !plan.legacy && plan.moved[a - 1] === true ? 1 : previous + 1;
    tags.push(plan.legacy ? { attempt } : { attempt, attemptScheduledAt: 1_000 * step + 10 * a });
  });
  return tags;
}

/** What was published of a step's model output so far, by attempt index (the model the live text is checked on). */
type Published = Map<number, Map<number, string>>;

function actionsOf(
  plans: readonly StepPlan[],
  compact: boolean,
  channel: MemoryDeltaChannel,
  published: Published = new Map(),
): Action[] {
  const actions: Action[] = [];
  const row = (turn: number, step: number, index: number, kind: 'text' | 'usage' | 'tool-progress', text: string) => {
    const tag = attemptTags(plans[step - 1] as StepPlan, step)[index] ?? { attempt: 1 };
    actions.push({
      kind: 'row',
      run: () => {
        if (kind !== 'tool-progress') {
          const attempts = published.get(step) ?? new Map<number, string>();
          published.set(step, attempts);
          attempts.set(index, (attempts.get(index) ?? '') + (kind === 'text' ? text : ''));
        }
        channel.publish({
          sessionId: SESSION,
          turn,
          step,
          ...tag,
          kind,
          text,
          at: 1,
          ...(kind === 'tool-progress' ? { callId: `c${step}`, name: 'count', progress: 1, total: 2 } : {}),
        });
      },
    });
  };
  plans.forEach((plan, index) => {
    const turn = 1;
    const step = index + 1;
    if (compact) actions.push({ kind: 'prune', ...tupleOf(compactBefore(turn, step)) });
    actions.push({ kind: 'log', event: (seq) => stepStart(seq, turn, step) });
    plan.attempts.forEach((chunks, a) => {
      if (a === 1 && plan.zombie) row(turn, step, 0, 'text', 'zz');
      for (const text of chunks) row(turn, step, a, 'text', text);
      if (plan.usage) {
        const usage = { inputUncached: 10 * step, cacheRead: 0, output: chunks.length, reasoning: 0 };
        row(turn, step, a, 'usage', formatUsageRow({ usage, cost: null }));
      }
    });
    const content = (plan.attempts.at(-1) ?? []).join('') + plan.tail;
    actions.push({ kind: 'log', event: (seq) => assistantMessage(seq, turn, step, content) });
    if (plan.zombie) row(turn, step, 0, 'text', 'late');
    if (plan.toolCall) {
      actions.push({
        kind: 'log',
        event: (seq) => event({ type: 'tool/start', at: 1, turn, step, callId: `c${step}`, name: 'count' }, seq),
      });
      row(turn, step, 0, 'tool-progress', 'half');
      actions.push({
        kind: 'log',
        event: (seq) =>
          event(
            { type: 'tool/result', at: 1, turn, step, callId: `c${step}`, name: 'count', output: 'ok', status: 'ok' },
            seq,
          ),
      });
    }
  });
  return actions;
}

function tupleOf([turn, step]: [number, number]): { turn: number; step: number } {
  return { turn, step };
}

/** What a consumer assembles from frames: events by seq, and per step its live text and final answer. */
class Consumer {
  readonly seqs: number[] = [];
  readonly live = new Map<string, string>();
  readonly answers = new Map<string, string>();
  replaced = 0;

  apply(frames: readonly StreamFrame[]): void {
    for (const frame of frames) {
      const key = 'turn' in frame ? `${frame.turn}.${frame.step}` : '';
      if ('restart' in frame && frame.restart === true) this.live.set(key, '');
      if (frame.type === 'text') this.live.set(key, (this.live.get(key) ?? '') + frame.text);
      else if (frame.type === 'event') this.seqs.push(frame.event.seq);
      else if (frame.type === 'answer') {
        const { event: answer } = frame;
        this.seqs.push(answer.seq);
        const step = `${answer.turn}.${answer.step}`;
        if (frame.replaced) this.replaced++;
        this.answers.set(step, frame.replaced ? (answer.content ?? '') : (this.live.get(step) ?? '') + frame.rest);
      }
    }
  }
}

async function drain(follower: SessionFollower): Promise<StreamFrame[]> {
  const all: StreamFrame[] = [];
  for (;;) {
    const frames = await follower.poll();
    if (frames.length === 0) return all;
    all.push(...frames);
  }
}

describe('resuming a stream from a frame position', () => {
  it('delivers every event once and assembles the logged answers, from any frame', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(stepPlan, { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        fc.array(fc.boolean(), { minLength: 60, maxLength: 60 }),
        async (plans, compact, pollAfter) => {
          const channel = new MemoryDeltaChannel();
          const events: SessionEvent[] = [sessionStart(SESSION)];
          const store = arrayStore(events);
          const viewer = new SessionFollower(store, channel, SESSION);
          const frames: StreamFrame[] = [];
          const published: Published = new Map();
          const actions = actionsOf(plans, compact, channel, published);
          const watching = new Consumer();
          for (const [i, action] of actions.entries()) {
            if (action.kind === 'row') action.run();
            else if (action.kind === 'log') events.push(action.event(events.length));
            else await channel.pruneBefore(SESSION, action.turn, action.step);
            if (!pollAfter[i % pollAfter.length]) continue;
            const polled = await viewer.poll();
            frames.push(...polled);
            watching.apply(polled);
            // Every row published so far has been read: a step not answered yet shows exactly what its latest
            // attempt (the last to publish) streamed — the text of no other attempt before it or mixed into it.
            for (const [step, attempts] of published) {
              const key = `1.${step}`;
              if (watching.answers.has(key) || !watching.live.has(key)) continue;
              const latest = Math.max(...attempts.keys());
              expect(watching.live.get(key), `step ${key}`).toBe(attempts.get(latest));
            }
          }
          frames.push(...(await drain(viewer)));

          const logged = new Map(
            events.flatMap((e) => (e.type === 'assistant/message' ? [[`${e.turn}.${e.step}`, e.content ?? '']] : [])),
          );
          const whole = events.map((e) => e.seq);
          // The uninterrupted viewer itself.
          const straight = new Consumer();
          straight.apply(frames);
          expect(straight.seqs).toEqual(whole);
          expect(straight.answers).toEqual(logged);
          // Honest: nothing compacted, one attempt per step. (After a retry a viewer may rightly replace: it can
          // read the answer in the same round as the new attempt's first rows, and the answer comes first.)
          const honest = !compact && plans.every((plan) => !plan.zombie && plan.attempts.length === 1);
          if (honest) expect(straight.replaced).toBe(0);

          for (let i = 0; i < frames.length; i++) {
            const frame = frames[i] as StreamFrame;
            const consumer = new Consumer();
            consumer.apply(frames.slice(0, i + 1));
            // Through its text form, as a consumer hands it back.
            const from = parsePosition(formatPosition(frame.position));
            consumer.apply(await drain(new SessionFollower(store, channel, SESSION, { from })));
            expect(consumer.seqs).toEqual(whole);
            expect(consumer.answers).toEqual(logged);
            // An honest stream never needs a replacement, resumed or not.
            if (honest) expect(consumer.replaced).toBe(0);
          }
          // Resumed again and again, a few frames at a time (each time from the last frame it had), while
          // the session is already complete: the same result, and every resume makes progress.
          const chained = new Consumer();
          let from: StreamPosition | undefined;
          for (let round = 0; round < frames.length * 2 + 2; round++) {
            const follower = new SessionFollower(store, channel, SESSION, from ? { from } : {});
            const got = (await follower.poll()).slice(0, 1 + (round % 3));
            if (got.length === 0) break;
            chained.apply(got);
            from = (got.at(-1) as StreamFrame).position;
          }
          expect(chained.seqs).toEqual(whole);
          expect(chained.answers).toEqual(logged);
          // Positions never go back.
          for (let i = 1; i < frames.length; i++) {
            const a = (frames[i - 1] as StreamFrame).position;
            const b = (frames[i] as StreamFrame).position;
            expect(b.seq >= a.seq && b.delta >= a.delta).toBe(true);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses a malformed position with a code and an example', () => {
    expect(parsePosition('42:1187')).toEqual({ seq: 42, delta: 1187 });
    expect(parsePosition('7')).toEqual({ seq: 7, delta: 0 });
    for (const bad of ['', 'x', '1:2:3', '-1:0', '1:-2', '1.5'])
      expect(() => parsePosition(bad)).toThrow(expect.objectContaining({ code: 'STREAM_POSITION_INVALID' }));
  });
});
