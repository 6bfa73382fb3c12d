// The console's timeline, pure over hand-built logs: a step's state comes from its own events (an
// interrupted answer is not "running"), its waterfall from their timestamps, its cost per model.
import { describe, expect, it } from 'vitest';
import { sessionTimeline } from '../../src/console/session-timeline.js';
import type { SessionEvent } from '../../src/core/index.js';
import {
  event,
  inboxEnqueue,
  requestSent,
  sessionStart,
  stepEnd,
  stepStart,
  T0,
  turnStart,
  userMessage,
} from '../helpers/event-builders.js';

const usage = { inputUncached: 100, cacheRead: 300, output: 20, reasoning: 0 };
const price = { inputPerMillion: 1, cachedInputPerMillion: 0.1, outputPerMillion: 2 };

/** turn 1 step 1 up to its request, sent 40 ms after the step started. */
function opened(): SessionEvent[] {
  return [
    sessionStart('t'),
    inboxEnqueue(1, 'm1', 'go'),
    turnStart(2, 1, T0 + 10),
    stepStart(3, 1, 1, T0 + 100),
    userMessage(4, 1, 1, 'm1', 'go', T0 + 110),
    requestSent(5, 1, 1, T0 + 140),
  ];
}

describe('the console timeline', () => {
  it('says how an interrupted step ended, never "running", once its step/end is logged', () => {
    const events = [
      ...opened(),
      event(
        {
          type: 'assistant/message',
          at: T0 + 900,
          turn: 1,
          step: 1,
          content: 'half an ans',
          toolCalls: [],
          finishReason: null,
          interrupted: true,
        },
        6,
      ),
      stepEnd(7, 1, 1, T0 + 905),
      event({ type: 'turn/end', at: T0 + 906, turn: 1, reason: 'aborted' }, 8),
    ];
    const running = sessionTimeline('t', events.slice(0, 6)).turns[0]?.steps[0];
    expect(running).toMatchObject({ state: 'running', endedAt: null, latencyMs: null });
    const [turn] = sessionTimeline('t', events).turns;
    expect(turn?.ended).toBe('aborted');
    expect(turn?.steps[0]).toMatchObject({
      state: 'interrupted',
      usage: null,
      startedAt: T0 + 100,
      endedAt: T0 + 905,
      latencyMs: 800,
    });
  });

  it('marks a step failed by its step/end error, and one cut before any answer as interrupted', () => {
    const failed = [
      ...opened(),
      event(
        { type: 'step/end', at: T0 + 500, turn: 1, step: 1, error: { code: 'PROVIDER_ERROR', message: 'HTTP 500' } },
        6,
      ),
    ];
    expect(sessionTimeline('t', failed).turns[0]?.steps[0]).toMatchObject({
      state: 'failed',
      error: { code: 'PROVIDER_ERROR', message: 'HTTP 500' },
    });
    const cut = [...opened(), stepEnd(6, 1, 1, T0 + 300)];
    expect(sessionTimeline('t', cut).turns[0]?.steps[0]?.state).toBe('interrupted');
  });

  it('draws the waterfall (wait, model, approval, tool) from the log times, with the cost per model', () => {
    const events = [
      ...opened(),
      event(
        {
          type: 'assistant/message',
          at: T0 + 640,
          turn: 1,
          step: 1,
          content: null,
          toolCalls: [{ id: 'c1', name: 'write_file', arguments: '{}' }],
          finishReason: 'tool_calls',
          usage,
          cost: { usd: 0.00017, price },
        },
        6,
      ),
      event(
        { type: 'approval/request', at: T0 + 650, turn: 1, step: 1, callId: 'c1', name: 'write_file', reason: 'asks' },
        7,
      ),
      event({ type: 'approval/decision', at: T0 + 2650, turn: 1, step: 1, callId: 'c1', decision: 'approve' }, 8),
      event({ type: 'tool/start', at: T0 + 2660, turn: 1, step: 1, callId: 'c1', name: 'write_file' }, 9),
      event(
        {
          type: 'tool/result',
          at: T0 + 2760,
          turn: 1,
          step: 1,
          callId: 'c1',
          name: 'write_file',
          status: 'ok',
          output: 'done',
        },
        10,
      ),
      stepEnd(11, 1, 1, T0 + 2770),
    ];
    const timeline = sessionTimeline('t', events);
    const step = timeline.turns[0]?.steps[0];
    expect(step?.state).toBe('completed');
    expect(step?.phases).toEqual([
      { kind: 'wait', label: 'request', startMs: 0, endMs: 40 },
      { kind: 'model', label: 'model', startMs: 40, endMs: 540 },
      { kind: 'approval', label: 'write_file (c1)', startMs: 550, endMs: 2550 },
      { kind: 'tool', label: 'write_file (c1)', startMs: 2560, endMs: 2660 },
    ]);
    expect(step?.cost?.usd).toBe(0.00017);
    expect(timeline.costByModel).toEqual([
      { model: 'unknown', steps: 1, usage, usd: 0.00017, unpricedSteps: 0, cacheReadShare: 0.75 },
    ]);
  });
});
