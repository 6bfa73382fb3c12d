// What the Live section shows of a session's streaming step, folded from /live messages, and its copy in
// sessionStorage together with the stream position it stands at, so a reload resumes right after it.
import type { LiveMessage } from '../../src/console/console-api.js';
import type { StepCost, Usage } from '../../src/core/index.js';
import { usageLabel } from '../../src/streaming/usage-label.js';

export interface LiveStep {
  readonly turn: number;
  readonly step: number;
  readonly text: string;
  readonly usage: Usage | null;
  readonly cost: StepCost | null;
}

export interface LiveState {
  /** The id of the last message folded in: the stream resumes after it. */
  readonly lastEventId: string | null;
  /** The step streaming now; null once its answer is logged (the timeline shows it then). */
  readonly step: LiveStep | null;
}

export const EMPTY_LIVE: LiveState = { lastEventId: null, step: null };

/** Folds one message (with its SSE id) into the state; messages that do not touch the live step keep it. */
export function applyLive(state: LiveState, message: LiveMessage, id: string | undefined): LiveState {
  const lastEventId = id ?? state.lastEventId;
  const current = state.step;
  switch (message.type) {
    case 'text':
    case 'usage': {
      const same = current !== null && current.turn === message.turn && current.step === message.step;
      // A retried attempt's first output voids what the failed attempt streamed, text and counts alike.
      const base: LiveStep =
        same && message.restart === undefined
          ? current
          : { turn: message.turn, step: message.step, text: '', usage: null, cost: null };
      const step =
        message.type === 'text'
          ? { ...base, text: base.text + message.text }
          : { ...base, usage: message.usage, cost: message.cost };
      return { lastEventId, step };
    }
    case 'event': {
      const e = message.event;
      // The logged answer (or the turn's end, when the step failed without one) takes over from the live text.
      const ends =
        current !== null &&
        ((e.type === 'assistant/message' && e.turn === current.turn && e.step === current.step) ||
          (e.type === 'turn/end' && e.turn === current.turn));
      return { lastEventId, step: ends ? null : current };
    }
    default:
      // `status` and `stalled` have no position and change nothing here.
      return id === undefined ? state : { lastEventId, step: current };
  }
}

/** "1,234 tokens · $0.0012": everything the step has counted so far, with its cost where it is priced. */
export function describeLiveUsage(step: LiveStep): string | null {
  return step.usage === null ? null : usageLabel(step.usage, step.cost);
}

const key = (sessionId: string) => `dh-console-live:${sessionId}`;

export function loadLive(sessionId: string): LiveState {
  try {
    const raw = sessionStorage.getItem(key(sessionId));
    if (raw === null) return EMPTY_LIVE;
    const parsed = JSON.parse(raw) as Partial<LiveState> | null;
    // Anything unexpected (an older page's format): start over from the beginning of the stream.
    if (typeof parsed?.lastEventId !== 'string' || parsed.step === undefined) return EMPTY_LIVE;
    return { lastEventId: parsed.lastEventId, step: parsed.step };
  } catch {
    return EMPTY_LIVE;
  }
}

/** Saved with every message: the position and the text it stands for must never disagree. */
export function saveLive(sessionId: string, state: LiveState): void {
  try {
    sessionStorage.setItem(key(sessionId), JSON.stringify(state));
  } catch {
    // Storage full or refused: a reload resumes from an earlier copy (or the start): slower, never wrong.
  }
}
