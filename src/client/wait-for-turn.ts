// Waiting for a turn with Temporal alone (no store): poll the `state` and `messageStatus` queries of the
// session's current run, with backoff, until the turn's end is in the state view. Pure but for the port it
// polls, so its rules are tested without a server (SessionClient wires it to Temporal).
import { DhError } from '../core/errors.js';
import type { MessageStatusView, SendReceipt, SessionStateView } from '../shared/session-messages.js';

/** The stable codes of the errors a wait ends with (besides the client's SESSION_CLOSED, SESSION_NOT_FOUND, CLIENT_TIMEOUT). */
export const TurnWaitErrorCode = {
  InvalidTurn: 'INVALID_TURN',
  MessageRefused: 'MESSAGE_REFUSED',
  MessageDiscarded: 'MESSAGE_DISCARDED',
  MessageTurnUnknown: 'MESSAGE_TURN_UNKNOWN',
} as const;

/**
 * How a turn ended. `reason` is what the workflow reported (`completed`, `aborted`, `truncated`, `blocked`,
 * `error`, `max-steps`, `budget`, …) with `errorCode` when it failed; null when the turn is known to have ended
 * (a later turn ended or runs) but the workflow no longer remembers how: older than its latest 16 turn ends, or
 * before a resume. The log has it then (`turn/end`).
 */
export interface TurnEnd {
  readonly turn: number;
  readonly reason: string | null;
  readonly errorCode: string | null;
}

export interface WaitForTurnOptions {
  /** Give up after this long: a DhError `CLIENT_TIMEOUT` naming the session and the turn (or message). */
  readonly timeoutMs?: number;
  /** Stop waiting: the wait rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

/** A receipt of `send` that can wait for the end of the turn its message lands in. */
export interface SentReceipt extends SendReceipt {
  /** See `SessionClient.turnEnded`. Not enumerable: the receipt serializes (and compares) as a plain `SendReceipt`. */
  turnEnded(options?: WaitForTurnOptions): Promise<TurnEnd>;
}

/** The session's current run as Temporal describes it (no worker needed). */
export interface RunDescription {
  readonly runId: string;
  /** Closed for good: completed, failed, terminated, cancelled, timed out (a continued-as-new run is not). */
  readonly closed: boolean;
  /** Closed by its own completion: its result names its last turn (`turns`). */
  readonly completed: boolean;
}

/** What a wait asks Temporal; each call may fail while no worker polls (a query needs one) and is then retried. */
export interface TurnWaitPort {
  /** Throws the client's SESSION_NOT_FOUND when the session has no workflow. */
  describe(): Promise<RunDescription>;
  state(runId: string): Promise<SessionStateView>;
  messageStatus(runId: string, messageId: string): Promise<MessageStatusView>;
  /** The last turn of a completed run (its result). */
  lastTurn(runId: string): Promise<number>;
}

/** First pause between polls; it doubles up to `MAX_POLL_MS` while nothing changes, and up to `MAX_RETRY_MS` on failures. */
const FIRST_POLL_MS = 50;
const MAX_POLL_MS = 1_000;
const MAX_RETRY_MS = 5_000;

/**
 * The end of turn `turn` as a state view knows it, or null while it has not ended (or runs now). A turn ended
 * once one of the view's turn ends names it (the latest such, see `recordTurnEnd` in the workflow), or once a
 * later turn ended or runs (then with the reason the view still lists, else null).
 */
export function turnEndFromView(view: SessionStateView, turn: number): TurnEnd | null {
  const running = view.status === 'running' || view.status === 'aborting';
  if (running && view.turn <= turn) return null;
  const ends = view.recentTurnEnds ?? (view.lastTurnEnd ? [view.lastTurnEnd] : []);
  const listed = ends.findLast((end) => end.turn === turn);
  if (listed) return { turn, reason: listed.reason, errorCode: listed.errorCode };
  const lastEnded = Math.max(view.lastTurnEnd?.turn ?? 0, ...ends.map((end) => end.turn));
  if (lastEnded > turn || (running && view.turn > turn)) return { turn, reason: null, errorCode: null };
  return null;
}

/**
 * Where a message stands for a wait: the turn it landed in, still `waiting`, or an error saying why no turn
 * will take it.
 */
export function messageLanding(sessionId: string, status: MessageStatusView): number | 'waiting' | DhError {
  const { messageId } = status;
  const details = { sessionId, messageId };
  switch (status.state) {
    case 'not-yet-logged':
    case 'queued':
    case 'claimed':
      return 'waiting';
    case 'refused':
      return new DhError(
        TurnWaitErrorCode.MessageRefused,
        `session "${sessionId}" refused message "${messageId}": ${status.reason ?? 'no reason given'}`,
        details,
      );
    case 'handled':
      if (status.turn !== undefined) return status.turn;
      if (status.discarded) {
        return new DhError(
          TurnWaitErrorCode.MessageDiscarded,
          `message "${messageId}" of session "${sessionId}" was discarded at close: no turn takes it`,
          details,
        );
      }
      return new DhError(
        TurnWaitErrorCode.MessageTurnUnknown,
        `session "${sessionId}" handled message "${messageId}" but no longer knows its turn (it keeps the latest 64, ` +
          'older workers none): its fate is in the log (messageFate)',
        details,
      );
    case 'unknown':
      return new DhError(
        TurnWaitErrorCode.MessageTurnUnknown,
        `session "${sessionId}" does not know message "${messageId}": never accepted, or older than its dedupe window`,
        details,
      );
  }
}

/** Polls `look` until it answers, with backoff; a failed look (no worker, Temporal unreachable) is retried. */
export async function pollUntil<T>(
  look: () => Promise<T | undefined>,
  options: WaitForTurnOptions & { readonly deadline: number; readonly timedOut: (cause: unknown) => Error },
): Promise<T> {
  const { signal, deadline } = options;
  let pause = FIRST_POLL_MS;
  let lastError: unknown;
  for (;;) {
    signal?.throwIfAborted();
    try {
      const answer = await look();
      if (answer !== undefined) return answer;
      pause = Math.min(pause * 2, MAX_POLL_MS);
    } catch (error) {
      signal?.throwIfAborted();
      if (error instanceof DhError) throw error;
      lastError = error;
      pause = Math.min(pause * 2, MAX_RETRY_MS);
    }
    const left = deadline - Date.now();
    if (left <= 0) throw options.timedOut(lastError);
    await sleep(Math.min(pause, left), signal);
  }
}

/**
 * Waits for the end of turn `turn` (see `SessionClient.waitForTurn`). Each poll describes the session's current
 * run, then asks that very run, so a closed run's answer is its final state.
 */
export function waitForTurnEnd(
  port: TurnWaitPort,
  sessionId: string,
  turn: number,
  options: WaitForTurnOptions & { readonly deadline: number },
): Promise<TurnEnd> {
  const look = async (): Promise<TurnEnd | undefined> => {
    const run = await port.describe();
    let view: SessionStateView | null = null;
    try {
      view = await port.state(run.runId);
    } catch (error) {
      // An open run's query fails while no worker polls: wait and ask again. A closed run has its result.
      if (!run.closed) throw error;
    }
    const end = view ? turnEndFromView(view, turn) : null;
    if (end) return end;
    if (!run.closed) return undefined;
    if (view) throw closedBefore(sessionId, turn, view.lastTurnEnd?.turn ?? view.turn);
    // No worker answers for the closed run: its result still says whether the turn can have run.
    const last = run.completed ? await port.lastTurn(run.runId) : null;
    if (last !== null && last < turn) throw closedBefore(sessionId, turn, last);
    throw new Error(`session "${sessionId}" is closed and no worker answers its state query`);
  };
  return pollUntil(look, {
    ...options,
    timedOut: (cause) =>
      new DhError(
        'CLIENT_TIMEOUT',
        `session "${sessionId}": turn ${turn} did not end within ${options.timeoutMs ?? 0} ms`,
        { sessionId, turn },
        { cause },
      ),
  });
}

/** Waits for the turn `messageId` lands in, then for its end (see `SessionClient.turnEnded`). */
export async function waitForMessageTurnEnd(
  port: TurnWaitPort,
  sessionId: string,
  messageId: string,
  options: WaitForTurnOptions & { readonly deadline: number },
): Promise<TurnEnd> {
  const look = async (): Promise<number | undefined> => {
    const run = await port.describe();
    const status = await port.messageStatus(run.runId, messageId);
    const landing = messageLanding(sessionId, status);
    if (landing instanceof DhError) throw landing;
    if (landing !== 'waiting') return landing;
    if (!run.closed) return undefined;
    throw new DhError(
      'SESSION_CLOSED',
      `session "${sessionId}" closed before message "${messageId}" landed in a turn`,
      { sessionId, messageId },
    );
  };
  const turn = await pollUntil(look, {
    ...options,
    timedOut: (cause) =>
      new DhError(
        'CLIENT_TIMEOUT',
        `session "${sessionId}": message "${messageId}" did not land in a turn within ${options.timeoutMs ?? 0} ms`,
        { sessionId, messageId },
        { cause },
      ),
  });
  return waitForTurnEnd(port, sessionId, turn, options);
}

function closedBefore(sessionId: string, turn: number, lastTurn: number): DhError {
  return new DhError(
    'SESSION_CLOSED',
    `session "${sessionId}" is closed after turn ${lastTurn}: turn ${turn} will not run (resume it to send more)`,
    { sessionId, turn, lastTurn },
  );
}

/** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
