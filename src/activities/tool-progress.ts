// A tool call's progress reporter (ToolContext.progress): checks what the tool hands over and passes it
// on at most once per TOOL_PROGRESS_INTERVAL_MS, so a chatty tool cannot flood the live channel. It never
// throws into the tool: a bad update is dropped, a failing observer is contained.
import type { ToolProgress } from '../plugins/contracts.js';

/** At most one update of a call passes per this many milliseconds. */
export const TOOL_PROGRESS_INTERVAL_MS = 250;
/** Longer messages are cut: a progress line is a note, not an output channel. */
export const MAX_PROGRESS_MESSAGE_CHARS = 500;

export interface ToolProgressReporter {
  /** What the tool calls; safe to call with anything, at any rate, after the call ended too. */
  readonly progress: (update: ToolProgress) => void;
  /** The call ended: an update still waiting is dropped (the call's result says more) and later ones are ignored. */
  readonly close: () => void;
}

/**
 * Throttles one call's updates: the first passes at once, one that comes sooner than the interval after
 * the last one passed waits for the interval's end, and a newer one replaces it meanwhile (the latest
 * always wins; none is lost to a burst but superseded ones). `emit` failures are swallowed.
 */
export function toolProgressReporter(
  emit: (update: ToolProgress) => void,
  intervalMs = TOOL_PROGRESS_INTERVAL_MS,
): ToolProgressReporter {
  let lastEmit = Number.NEGATIVE_INFINITY;
  let waiting: ToolProgress | null = null;
  let timer: NodeJS.Timeout | null = null;
  let closed = false;

  const pass = (update: ToolProgress): void => {
    lastEmit = Date.now();
    try {
      emit(update);
    } catch {
      // Progress is for viewers only: losing an update must never cost the call.
    }
  };

  return {
    progress: (update) => {
      if (closed) return;
      const checked = checkedProgress(update);
      if (checked === null) return;
      const since = Date.now() - lastEmit;
      if (timer === null && since >= intervalMs) {
        pass(checked);
        return;
      }
      waiting = checked;
      if (timer !== null) return;
      timer = setTimeout(() => {
        timer = null;
        const next = waiting;
        waiting = null;
        if (next !== null && !closed) pass(next);
      }, intervalMs - since);
      timer.unref();
    },
    close: () => {
      closed = true;
      waiting = null;
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}

/** The update as the tool meant it, or null when it is no update (progress not a finite number). */
export function checkedProgress(update: unknown): ToolProgress | null {
  if (typeof update !== 'object' || update === null) return null;
  const { progress, total, message } = update as Record<string, unknown>;
  if (typeof progress !== 'number' || !Number.isFinite(progress)) return null;
  return {
    progress,
    ...(typeof total === 'number' && Number.isFinite(total) ? { total } : {}),
    ...(typeof message === 'string' && message !== ''
      ? {
          message: message.length > MAX_PROGRESS_MESSAGE_CHARS ? message.slice(0, MAX_PROGRESS_MESSAGE_CHARS) : message,
        }
      : {}),
  };
}
