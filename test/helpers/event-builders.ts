// Hand-built valid session events for tests: each builder takes the seq (and optionally the time) and
// completes its draft with `toEvent`, so keys are always the real ones.
import { toEvent, type EventDraft, type SessionEvent } from '../../src/core/events.js';
import { SESSION_FORMAT_VERSION } from '../../src/core/version.js';

/** A fixed epoch-ms base time; tests add offsets to it. */
export const T0 = 1_750_000_000_000;

export function sessionStart(sessionId: string, at = T0): SessionEvent {
  return toEvent({ type: 'session/start', at, sessionId, formatVersion: SESSION_FORMAT_VERSION }, 0);
}

export function inboxEnqueue(
  seq: number,
  messageId: string,
  text = `message ${messageId}`,
  at = T0 + seq,
): SessionEvent {
  return toEvent(
    { type: 'inbox/enqueue', at, messageId, target: 'next-turn', wakeup: true, origin: 'followup', content: text },
    seq,
  );
}

export function turnStart(seq: number, turn: number, at = T0 + seq): SessionEvent {
  return toEvent({ type: 'turn/start', at, turn }, seq);
}

export function turnEnd(seq: number, turn: number, at = T0 + seq): SessionEvent {
  return toEvent({ type: 'turn/end', at, turn, reason: 'completed' }, seq);
}

export function stepStart(seq: number, turn: number, step: number, at = T0 + seq): SessionEvent {
  return toEvent({ type: 'step/start', at, turn, step }, seq);
}

export function stepEnd(seq: number, turn: number, step: number, at = T0 + seq): SessionEvent {
  return toEvent({ type: 'step/end', at, turn, step }, seq);
}

export function userMessage(
  seq: number,
  turn: number,
  step: number,
  messageId: string,
  text = `message ${messageId}`,
  at = T0 + seq,
): SessionEvent {
  return toEvent({ type: 'user/message', at, turn, step, messageId, origin: 'followup', content: text }, seq);
}

export function assistantMessage(
  seq: number,
  turn: number,
  step: number,
  content: string | null,
  at = T0 + seq,
): SessionEvent {
  return toEvent(
    {
      type: 'assistant/message',
      at,
      turn,
      step,
      content,
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputUncached: 10, cacheRead: 0, output: 5, reasoning: 0 },
    },
    seq,
  );
}

/** The step's recorded request: every model answer must follow one (`assistantMessage` needs it first). */
export function requestSent(seq: number, turn: number, step: number, at = T0 + seq): SessionEvent {
  const digest = `sha256:${(turn * 1000 + step).toString(16).padStart(64, '0')}`;
  return toEvent({ type: 'request/sent', at, turn, step, digest, bytes: 100 }, seq);
}

/** Any draft at a seq, for events without a dedicated builder. */
export function event(draft: EventDraft, seq: number): SessionEvent {
  return toEvent(draft, seq);
}

/**
 * A plausible log of `turns` turns (one step each): start, then per turn enqueue, turn/start,
 * step/start, user/message, request/sent, assistant/message, step/end, turn/end. Its length is `1 + 8 * turns`.
 */
export function sampleLog(sessionId: string, turns = 2): SessionEvent[] {
  const events: SessionEvent[] = [sessionStart(sessionId)];
  for (let turn = 1; turn <= turns; turn++) {
    const messageId = `m${turn}`;
    const seq = events.length;
    events.push(
      inboxEnqueue(seq, messageId, `question ${turn}`),
      turnStart(seq + 1, turn),
      stepStart(seq + 2, turn, 1),
      userMessage(seq + 3, turn, 1, messageId, `question ${turn}`),
      requestSent(seq + 4, turn, 1),
      assistantMessage(seq + 5, turn, 1, `answer ${turn}`),
      stepEnd(seq + 6, turn, 1),
      turnEnd(seq + 7, turn),
    );
  }
  return events;
}

/** The same event at another time: same key, same digest (the digest excludes `at`). */
export function retimed(e: SessionEvent, at: number): SessionEvent {
  return { ...e, at };
}
