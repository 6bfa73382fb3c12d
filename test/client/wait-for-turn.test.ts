// Waiting for a turn without a server: which turn ends a state view shows (listed, ended but forgotten, running),
// where a message stands (messageStatus), the workflow's record of recent turn ends, and the polling loop against
// a scripted port: retries while no worker answers, a closed run, a timeout, an abort.
import { describe, expect, it } from 'vitest';
import { DhError } from '../../src/core/errors.js';
import {
  messageLanding,
  turnEndFromView,
  waitForMessageTurnEnd,
  waitForTurnEnd,
  type RunDescription,
  type TurnWaitPort,
} from '../../src/client/wait-for-turn.js';
import type { MessageStatusView, SessionStateView, TurnEndView } from '../../src/shared/session-messages.js';
import { recordTurnEnd, RECENT_TURN_ENDS_KEPT, sessionStateFrom } from '../../src/workflows/session-state.js';

function view(fields: Partial<SessionStateView>): SessionStateView {
  return {
    sessionId: 's',
    status: 'idle',
    turn: 0,
    step: 0,
    queues: { nextTurn: 0, nextStep: 0, notYetLogged: 0 },
    head: 0,
    rejectedSignals: 0,
    lastRejection: null,
    wakeLatched: false,
    closing: false,
    lastTurnEnd: null,
    usage: { inputUncached: 0, cacheRead: 0, output: 0, reasoning: 0 },
    pendingApproval: null,
    compactions: 0,
    ...fields,
  };
}
const end = (turn: number, reason = 'completed', errorCode: string | null = null): TurnEndView => ({
  turn,
  reason,
  errorCode,
});

describe('turnEndFromView', () => {
  it('finds a listed end, says "ended, reason unknown" past the list, and waits for a running or later turn', () => {
    const idle = view({
      turn: 5,
      lastTurnEnd: end(5),
      recentTurnEnds: [end(3, 'aborted'), end(4, 'error', 'E'), end(5)],
    });
    expect(turnEndFromView(idle, 5)).toEqual(end(5));
    expect(turnEndFromView(idle, 4)).toEqual(end(4, 'error', 'E'));
    expect(turnEndFromView(idle, 3)).toEqual(end(3, 'aborted'));
    expect(turnEndFromView(idle, 2)).toEqual({ turn: 2, reason: null, errorCode: null });
    expect(turnEndFromView(idle, 6)).toBeNull();
    const running = view({ status: 'running', turn: 6, lastTurnEnd: end(5), recentTurnEnds: [end(5)] });
    expect(turnEndFromView(running, 6)).toBeNull();
    expect(turnEndFromView(running, 5)).toEqual(end(5));
    expect(turnEndFromView({ ...running, status: 'aborting' }, 6)).toBeNull();
  });

  it('reads an older worker’s view (lastTurnEnd only), and never takes an earlier end of a number the running turn reuses', () => {
    expect(turnEndFromView(view({ turn: 2, lastTurnEnd: end(2, 'truncated') }), 2)).toEqual(end(2, 'truncated'));
    expect(turnEndFromView(view({ turn: 2, lastTurnEnd: end(2) }), 1)).toEqual({
      turn: 1,
      reason: null,
      errorCode: null,
    });
    // Turn 4 ended before it opened in the log (interrupted at once): the next turn runs as 4 again.
    const reused = view({
      status: 'running',
      turn: 4,
      lastTurnEnd: end(4, 'aborted'),
      recentTurnEnds: [end(4, 'aborted')],
    });
    expect(turnEndFromView(reused, 4)).toBeNull();
    expect(turnEndFromView(view({ status: 'running', turn: 7 }), 3)).toEqual({
      turn: 3,
      reason: null,
      errorCode: null,
    });
  });
});

describe('recordTurnEnd (the workflow side of the view)', () => {
  it('keeps the latest ends, one per turn number, the last as lastTurnEnd', () => {
    const state = sessionStateFrom({ sessionId: 's' }, () => 'instance');
    for (let turn = 1; turn <= RECENT_TURN_ENDS_KEPT + 3; turn++) recordTurnEnd(state, end(turn));
    expect(state.recentTurnEnds).toHaveLength(RECENT_TURN_ENDS_KEPT);
    expect(state.recentTurnEnds[0]?.turn).toBe(4);
    recordTurnEnd(state, end(RECENT_TURN_ENDS_KEPT + 3, 'error', 'X'));
    expect(state.recentTurnEnds.at(-1)).toEqual(end(RECENT_TURN_ENDS_KEPT + 3, 'error', 'X'));
    expect(state.recentTurnEnds).toHaveLength(RECENT_TURN_ENDS_KEPT);
    expect(state.lastTurnEnd).toEqual(state.recentTurnEnds.at(-1));
    // A continued run starts from the carry's list; an older carry has lastTurnEnd only.
    expect(sessionStateFrom({ sessionId: 's', carry: carryWith(end(9)) }, () => 'i').recentTurnEnds).toEqual([end(9)]);
  });
});

function carryWith(lastTurnEnd: TurnEndView) {
  return {
    head: 1,
    lastTurn: lastTurnEnd.turn,
    queue: [],
    ingress: [],
    wakeLatched: false,
    recentMessageIds: [],
    instance: { id: 'i', headerRecorded: true },
    closing: false,
    sessionSteps: 0,
    sessionTokens: 0,
    rejectedSignals: 0,
    continuedRuns: 1,
    lastTurnEnd,
  };
}

describe('messageLanding', () => {
  const status = (fields: Omit<MessageStatusView, 'messageId'>): MessageStatusView => ({ messageId: 'm', ...fields });
  const code = (landing: unknown) => (landing instanceof DhError ? landing.code : landing);
  it('waits while queued or claimed, answers the landed turn, and names why no turn will take it', () => {
    expect(code(messageLanding('s', status({ state: 'queued', target: 'next-turn' })))).toBe('waiting');
    expect(code(messageLanding('s', status({ state: 'not-yet-logged' })))).toBe('waiting');
    expect(code(messageLanding('s', status({ state: 'claimed' })))).toBe('waiting');
    expect(code(messageLanding('s', status({ state: 'handled', turn: 4 })))).toBe(4);
    expect(code(messageLanding('s', status({ state: 'refused', reason: 'too big' })))).toBe('MESSAGE_REFUSED');
    expect(code(messageLanding('s', status({ state: 'handled', discarded: true })))).toBe('MESSAGE_DISCARDED');
    expect(code(messageLanding('s', status({ state: 'handled' })))).toBe('MESSAGE_TURN_UNKNOWN');
    expect(code(messageLanding('s', status({ state: 'unknown' })))).toBe('MESSAGE_TURN_UNKNOWN');
  });
});

/** A port that answers from a script of (run, view or failure) steps, the last repeated. */
function scriptedPort(
  steps: readonly {
    run: RunDescription;
    view?: SessionStateView | Error;
    message?: MessageStatusView;
    lastTurn?: number;
  }[],
) {
  let i = 0;
  const calls = { describe: 0, state: [] as string[] };
  const current = () => steps[Math.min(i, steps.length - 1)]!;
  const port: TurnWaitPort = {
    describe: () => {
      calls.describe++;
      const step = current();
      i++;
      return Promise.resolve(step.run);
    },
    state: (runId) => {
      calls.state.push(runId);
      const answer = steps[Math.min(i - 1, steps.length - 1)]!.view;
      return answer instanceof Error || answer === undefined
        ? Promise.reject(answer ?? new Error('no view'))
        : Promise.resolve(answer);
    },
    messageStatus: () => {
      const answer = steps[Math.min(i - 1, steps.length - 1)]!.message;
      return answer ? Promise.resolve(answer) : Promise.reject(new Error('no worker'));
    },
    lastTurn: () => Promise.resolve(steps[Math.min(i - 1, steps.length - 1)]!.lastTurn ?? 0),
  };
  return { port, calls };
}
const open = (runId: string): RunDescription => ({ runId, closed: false, completed: false });
const completed = (runId: string): RunDescription => ({ runId, closed: true, completed: true });
const forever = { deadline: Number.POSITIVE_INFINITY };

describe('waitForTurnEnd', () => {
  it('keeps asking while no worker answers, and follows the current run (continue-as-new)', async () => {
    const { port, calls } = scriptedPort([
      { run: open('r1'), view: new Error('no poller') },
      { run: open('r1'), view: view({ status: 'running', turn: 3, lastTurnEnd: end(2) }) },
      { run: open('r2'), view: view({ turn: 3, lastTurnEnd: end(3, 'aborted'), recentTurnEnds: [end(3, 'aborted')] }) },
    ]);
    await expect(waitForTurnEnd(port, 's', 3, forever)).resolves.toEqual(end(3, 'aborted'));
    expect(calls.state).toEqual(['r1', 'r1', 'r2']);
  });

  it('SESSION_CLOSED once the run closed before the turn; from its result when no worker answers', async () => {
    const closedView = view({ status: 'closed', closing: true, turn: 2, lastTurnEnd: end(2) });
    const withView = scriptedPort([{ run: completed('r'), view: closedView }]).port;
    await expect(waitForTurnEnd(withView, 's', 3, forever)).rejects.toMatchObject({
      code: 'SESSION_CLOSED',
      details: { sessionId: 's', turn: 3, lastTurn: 2 },
    });
    await expect(waitForTurnEnd(withView, 's', 2, forever)).resolves.toEqual(end(2));
    const noWorker = scriptedPort([{ run: completed('r'), view: new Error('no poller'), lastTurn: 2 }]).port;
    await expect(waitForTurnEnd(noWorker, 's', 3, forever)).rejects.toMatchObject({ code: 'SESSION_CLOSED' });
  });

  it('CLIENT_TIMEOUT names the session and the turn; an abort rejects with its reason', async () => {
    const { port } = scriptedPort([{ run: open('r'), view: view({ status: 'running', turn: 1 }) }]);
    const started = Date.now();
    await expect(waitForTurnEnd(port, 's', 1, { timeoutMs: 200, deadline: started + 200 })).rejects.toMatchObject({
      code: 'CLIENT_TIMEOUT',
      details: { sessionId: 's', turn: 1 },
      message: expect.stringMatching(/turn 1 did not end within 200 ms/) as unknown,
    });
    expect(Date.now() - started).toBeLessThan(1_000);
    const controller = new AbortController();
    const waiting = waitForTurnEnd(port, 's', 1, { ...forever, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop')), 50);
    await expect(waiting).rejects.toThrow('stop');
  });
});

describe('waitForMessageTurnEnd', () => {
  it('waits for the landing turn, then for its end', async () => {
    const { port } = scriptedPort([
      { run: open('r'), message: { messageId: 'm', state: 'queued', target: 'next-turn' } },
      {
        run: open('r'),
        message: { messageId: 'm', state: 'handled', turn: 2 },
        view: view({ status: 'running', turn: 2 }),
      },
      {
        run: open('r'),
        message: { messageId: 'm', state: 'handled', turn: 2 },
        view: view({ turn: 2, lastTurnEnd: end(2) }),
      },
    ]);
    await expect(waitForMessageTurnEnd(port, 's', 'm', forever)).resolves.toEqual(end(2));
  });

  it('SESSION_CLOSED when the run closed with the message still queued', async () => {
    const { port } = scriptedPort([
      { run: completed('r'), message: { messageId: 'm', state: 'queued', target: 'next-step' } },
    ]);
    await expect(waitForMessageTurnEnd(port, 's', 'm', forever)).rejects.toMatchObject({
      code: 'SESSION_CLOSED',
      details: { sessionId: 's', messageId: 'm' },
    });
  });
});
