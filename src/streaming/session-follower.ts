// Follows one session for a viewer: catches up from the log, then merges the live deltas of the step
// being streamed with the logged events as they land. The log is authoritative: when a step's answer is
// logged, the viewer gets only what it has not shown yet (or the whole answer, if a retried attempt's
// output was shown); deltas of logged steps and of superseded attempts are dropped. A tool call's
// progress is shown while the call runs: after its logged `tool/start`, until its logged `tool/result`.
import type { EventOf, SessionEvent } from '../core/index.js';
import type { SessionStore } from '../stores/session-store.js';
import type { DeltaChannel, LiveDelta, LiveDeltaKind } from './delta-channel.js';

export type FollowOp =
  /** A logged event (assistant messages come as `answer`). */
  | { readonly type: 'event'; readonly event: SessionEvent }
  /**
   * A logged assistant message. `rest` is the part of its content the viewer has not been shown live;
   * `replaced` means what was shown live is not a prefix of it (show the whole content again).
   */
  | {
      readonly type: 'answer';
      readonly event: EventOf<'assistant/message'>;
      readonly rest: string;
      readonly replaced: boolean;
      /** Some of it was shown live. */
      readonly streamed: boolean;
    }
  /** Live answer text of a step not logged yet. */
  | { readonly type: 'text'; readonly turn: number; readonly step: number; readonly text: string }
  | { readonly type: 'reasoning'; readonly turn: number; readonly step: number; readonly text: string }
  | { readonly type: 'tool-delta'; readonly turn: number; readonly step: number; readonly name: string | null }
  /** The step waits for the fleet's rate limiter (live only): why, calls ahead, expected wait left. */
  | {
      readonly type: 'limiter-wait';
      readonly turn: number;
      readonly step: number;
      readonly reason: string;
      readonly ahead: number;
      readonly waitMs: number;
    }
  /** A retried attempt started streaming: what was shown live for this step is void. */
  | { readonly type: 'retry'; readonly turn: number; readonly step: number; readonly attempt: number }
  /** A running tool call's progress (live only, never logged); each differs from the call's previous one. */
  | {
      readonly type: 'tool-progress';
      readonly turn: number;
      readonly step: number;
      readonly callId: string;
      readonly name: string;
      readonly progress: number;
      readonly total: number | null;
      readonly message: string | null;
    };

export interface SessionFollowerOptions {
  /** Emit events from this seq on (default 0); earlier ones only inform which steps are logged. */
  readonly fromSeq?: number;
}

interface StepView {
  attempt: number;
  shown: string;
  toolNames: Map<number, string>;
}

/** A tool call logged as started and not yet as ended: its progress is shown. */
interface RunningCall {
  readonly name: string;
  /** The highest tool-activity attempt seen reporting for it (0: none yet). */
  attempt: number;
  /** The last update shown, to show only changes. */
  shown: string | null;
}

export class SessionFollower {
  readonly #store: SessionStore;
  readonly #channel: DeltaChannel;
  readonly #sessionId: string;
  readonly #fromSeq: number;
  #nextSeq = 0;
  #deltaCursor = 0;
  /** The last (turn, step) whose answer is logged. */
  #logged: { turn: number; step: number } = { turn: 0, step: 0 };
  readonly #steps = new Map<string, StepView>();
  /** Keyed by turn, step and call id. */
  readonly #running = new Map<string, RunningCall>();

  constructor(store: SessionStore, channel: DeltaChannel, sessionId: string, options: SessionFollowerOptions = {}) {
    this.#store = store;
    this.#channel = channel;
    this.#sessionId = sessionId;
    this.#fromSeq = options.fromSeq ?? 0;
  }

  get sessionId(): string {
    return this.#sessionId;
  }

  /** The next seq the follower will read from the log. */
  get head(): number {
    return this.#nextSeq;
  }

  /**
   * One round. Deltas are read before the log, so every event that precedes a delta causally (the
   * step's start, the previous step's tool results) is in the same round's log read.
   */
  async poll(): Promise<FollowOp[]> {
    const deltas = await this.#channel.read(this.#sessionId, this.#deltaCursor);
    const events = await this.#readLog();
    const ops: FollowOp[] = [];
    for (const event of events) {
      this.#nextSeq = event.seq + 1;
      this.#trackCalls(event);
      if (event.type === 'assistant/message') {
        const key = stepKey(event.turn, event.step);
        const view = this.#steps.get(key);
        this.#steps.delete(key);
        this.#logged = { turn: event.turn, step: event.step };
        if (event.seq < this.#fromSeq) continue;
        const content = event.content ?? '';
        const shown = view?.shown ?? '';
        const prefix = content.startsWith(shown);
        ops.push({
          type: 'answer',
          event,
          rest: prefix ? content.slice(shown.length) : content,
          replaced: !prefix,
          streamed: shown.length > 0,
        });
      } else if (event.seq >= this.#fromSeq) {
        ops.push({ type: 'event', event });
      }
    }
    for (const delta of deltas) {
      this.#deltaCursor = delta.id;
      if (delta.kind === 'tool-progress') {
        // Its step's answer is logged (the tools run after it): progress goes by the call, not the step.
        const op = this.#progress(delta);
        if (op !== null) ops.push(op);
        continue;
      }
      if (delta.kind === 'limiter-wait') {
        // Only while its step's answer is not logged: a wait that ended is not news.
        if (after(delta, this.#logged)) {
          ops.push({
            type: 'limiter-wait',
            turn: delta.turn,
            step: delta.step,
            reason: delta.text,
            ahead: delta.progress ?? 0,
            waitMs: delta.total ?? 0,
          });
        }
        continue;
      }
      // A kind from a newer writer is skipped, not mistaken for one of these.
      if (!MODEL_KINDS.has(delta.kind) || !after(delta, this.#logged)) continue;
      const key = stepKey(delta.turn, delta.step);
      let view = this.#steps.get(key);
      if (view !== undefined && delta.attempt < view.attempt) continue;
      if (view === undefined || delta.attempt > view.attempt) {
        if (view !== undefined) ops.push({ type: 'retry', turn: delta.turn, step: delta.step, attempt: delta.attempt });
        view = { attempt: delta.attempt, shown: '', toolNames: new Map() };
        this.#steps.set(key, view);
      }
      if (delta.kind === 'text') {
        view.shown += delta.text;
        ops.push({ type: 'text', turn: delta.turn, step: delta.step, text: delta.text });
      } else if (delta.kind === 'reasoning') {
        ops.push({ type: 'reasoning', turn: delta.turn, step: delta.step, text: delta.text });
      } else {
        const index = delta.index ?? 0;
        if (delta.name !== undefined) view.toolNames.set(index, delta.name);
        ops.push({ type: 'tool-delta', turn: delta.turn, step: delta.step, name: view.toolNames.get(index) ?? null });
      }
    }
    return ops;
  }

  /** Which calls run, from the log: started, and neither ended nor left behind by the turn's end. */
  #trackCalls(event: SessionEvent): void {
    if (event.type === 'tool/start') {
      this.#running.set(callKey(event.turn, event.step, event.callId), { name: event.name, attempt: 0, shown: null });
    } else if (event.type === 'tool/result') {
      this.#running.delete(callKey(event.turn, event.step, event.callId));
    } else if (event.type === 'turn/end') {
      this.#running.clear();
    }
  }

  /** The op for a progress row of a running call, or null (call not running, stale attempt, nothing new). */
  #progress(delta: LiveDelta): FollowOp | null {
    if (delta.callId === undefined || delta.progress === undefined) return null;
    const call = this.#running.get(callKey(delta.turn, delta.step, delta.callId));
    if (call === undefined || delta.attempt < call.attempt) return null;
    if (delta.attempt > call.attempt) {
      call.attempt = delta.attempt;
      call.shown = null;
    }
    const message = delta.text !== '' ? delta.text : null;
    const total = delta.total ?? null;
    const shown = JSON.stringify([delta.progress, total, message]);
    if (shown === call.shown) return null;
    call.shown = shown;
    return {
      type: 'tool-progress',
      turn: delta.turn,
      step: delta.step,
      callId: delta.callId,
      name: delta.name ?? call.name,
      progress: delta.progress,
      total,
      message,
    };
  }

  /** Waits for new deltas (or the timeout); the log is read on the next poll either way. */
  wait(timeoutMs: number): Promise<void> {
    return this.#channel.wait(this.#sessionId, timeoutMs);
  }

  async #readLog(): Promise<SessionEvent[]> {
    try {
      return await this.#store.read(this.#sessionId, this.#nextSeq);
    } catch (error) {
      // The workflow has not created the session's log yet.
      if ((error as { code?: unknown }).code === 'SESSION_NOT_FOUND') return [];
      throw error;
    }
  }
}

function stepKey(turn: number, step: number): string {
  return `${turn}.${step}`;
}

/** The kinds a model step streams. */
const MODEL_KINDS: ReadonlySet<string> = new Set<LiveDeltaKind>(['text', 'reasoning', 'tool-call']);

function callKey(turn: number, step: number, callId: string): string {
  return `${turn}.${step}.${callId}`;
}

function after(delta: { turn: number; step: number }, logged: { turn: number; step: number }): boolean {
  return delta.turn > logged.turn || (delta.turn === logged.turn && delta.step > logged.step);
}
