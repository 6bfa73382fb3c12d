// Follows one session for a viewer: catches up from the log, then merges the live deltas of the step
// being streamed with the logged events as they land. The log is authoritative: when a step's answer is
// logged, the viewer gets only what it has not shown yet (or the whole answer, if a retried attempt's
// output was shown); deltas of logged steps and of superseded attempts (attempt-order.ts) are dropped. A
// tool call's progress is shown while the call runs: after its logged `tool/start`, until its logged `tool/result`.
// Every frame carries its stream position; a follower started at a frame's position continues right after it.
import type { EventOf, SessionEvent, StepCost, Usage } from '../core/index.js';
import { compareAttempts, type AttemptTag } from './attempt-order.js';
import type { DeltaChannel, LiveDelta, LiveDeltaKind } from './delta-channel.js';
import { parseUsageRow } from './usage-row.js';
import { START_POSITION, type StreamPosition } from './stream-position.js';

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
  /**
   * Live output of a step not logged yet. `restart` marks the first output of a retried attempt: what was
   * shown live of this step before it is void (the attempt that streamed it failed). It rides on the
   * output itself, never as a frame of its own, so a consumer can never have the one without the other.
   */
  | (LiveOutput & { readonly type: 'text'; readonly text: string })
  | (LiveOutput & { readonly type: 'reasoning'; readonly text: string })
  | (LiveOutput & { readonly type: 'tool-delta'; readonly name: string | null })
  /** The step waits for the fleet's rate limiter (live only): why, calls ahead, expected wait left. */
  | {
      readonly type: 'limiter-wait';
      readonly turn: number;
      readonly step: number;
      readonly reason: string;
      readonly ahead: number;
      readonly waitMs: number;
    }
  /**
   * Token counts of a step while it streams, as the provider reported them (live only; the logged answer
   * carries the final ones), with their cost where the worker has a price for the model.
   */
  | (LiveOutput & { readonly type: 'usage'; readonly usage: Usage; readonly cost: StepCost | null })
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

/** What a follower reads: the log (a session store) and the live rows (a delta channel). */
export interface FollowedLog {
  read(sessionId: string, fromSeq?: number): Promise<SessionEvent[]>;
}
export type FollowedChannel = Pick<DeltaChannel, 'read' | 'wait'>;

/** What every live-output op of a step carries. */
interface LiveOutput {
  readonly turn: number;
  readonly step: number;
  /**
   * The model activity's attempt that streamed it. A step that moved from its host's model queue to the
   * shared one counts from 1 again; `restart` says which output is a later attempt's, not this number.
   */
  readonly attempt: number;
  /** The first output of a retried attempt: void what was shown live of this step before it. */
  readonly restart?: true;
}

/** An op with the stream position after it: what a consumer hands back to resume right after this frame. */
export type StreamFrame = FollowOp & { readonly position: StreamPosition };

export interface SessionFollowerOptions {
  /** Emit events from this seq on (default 0); earlier ones only inform which steps are logged. */
  readonly fromSeq?: number;
  /**
   * Resume right after the frame that carried this position (takes the place of `fromSeq`): the delta rows
   * up to `delta` are replayed silently, so what follows is exactly what the first follower emitted after it.
   */
  readonly from?: StreamPosition;
}

interface StepView {
  attempt: AttemptTag;
  shown: string;
  toolNames: Map<number, string>;
}

/** A tool call logged as started and not yet as ended: its progress is shown. */
interface RunningCall {
  readonly name: string;
  /** The latest attempt seen reporting for it (null: none yet). */
  attempt: AttemptTag | null;
  /** The last update shown, to show only changes. */
  shown: string | null;
}

export class SessionFollower {
  readonly #store: FollowedLog;
  readonly #channel: FollowedChannel;
  readonly #sessionId: string;
  readonly #from: StreamPosition;
  /** Delta rows up to `#from.delta` still to be replayed silently (the first poll does it). */
  #replayPending: boolean;
  /**
   * Set when a resumed-from consumer had read past rows but had none of a step still streaming: the
   * oldest step the channel still has rows of (null: none). Compaction and the row cap drop the oldest
   * steps first, so if the channel has nothing of the next answered step or before, that step's rows may
   * be gone with what the consumer saw of them: its answer then replaces the consumer's text whole.
   */
  #resumeCheck: { oldest: { turn: number; step: number } | null } | null = null;
  #nextSeq = 0;
  #deltaCursor = 0;
  /** The last (turn, step) whose answer is logged. */
  #logged: { turn: number; step: number } = { turn: 0, step: 0 };
  readonly #steps = new Map<string, StepView>();
  /** Keyed by turn, step and call id. */
  readonly #running = new Map<string, RunningCall>();

  constructor(store: FollowedLog, channel: FollowedChannel, sessionId: string, options: SessionFollowerOptions = {}) {
    this.#store = store;
    this.#channel = channel;
    this.#sessionId = sessionId;
    this.#from = options.from ?? { ...START_POSITION, seq: options.fromSeq ?? 0 };
    this.#replayPending = this.#from.delta > 0;
  }

  get sessionId(): string {
    return this.#sessionId;
  }

  /** The next seq the follower will read from the log. */
  get head(): number {
    return this.#nextSeq;
  }

  /** The position after the last frame returned (where a new follower would continue). */
  get position(): StreamPosition {
    return { seq: Math.max(this.#nextSeq, this.#from.seq), delta: this.#deltaCursor };
  }

  /**
   * One round. Deltas are read before the log, so every event that precedes a delta causally (the
   * step's start, the previous step's tool results) is in the same round's log read. Each frame's
   * position is the one after it: an event's is its seq + 1 with the delta cursor of the previous round
   * (its round's rows come after it); a row's is the round's log head with the row's id.
   */
  async poll(): Promise<StreamFrame[]> {
    const deltas = await this.#channel.read(this.#sessionId, this.#replayPending ? 0 : this.#deltaCursor);
    const events = await this.#readLog();
    const frames: StreamFrame[] = [];
    let replay: LiveDelta[] = [];
    let fresh = deltas;
    if (this.#replayPending) {
      replay = deltas.filter((d) => d.id <= this.#from.delta);
      fresh = deltas.filter((d) => d.id > this.#from.delta);
    }
    for (const event of events) {
      if (event.seq >= this.#from.seq && this.#replayPending) this.#replay(replay, fresh);
      this.#nextSeq = event.seq + 1;
      this.#trackCalls(event);
      const position = { seq: event.seq + 1, delta: this.#deltaCursor };
      if (event.type === 'assistant/message') {
        const key = stepKey(event.turn, event.step);
        const view = this.#steps.get(key);
        this.#steps.delete(key);
        this.#logged = { turn: event.turn, step: event.step };
        const check = this.#resumeCheck;
        this.#resumeCheck = null;
        const unknown = check !== null && (check.oldest === null || after(check.oldest, event));
        if (event.seq < this.#from.seq) continue;
        const content = event.content ?? '';
        const shown = view?.shown ?? '';
        const prefix = !unknown && content.startsWith(shown);
        frames.push({
          type: 'answer',
          event,
          rest: prefix ? content.slice(shown.length) : content,
          replaced: !prefix,
          streamed: shown.length > 0,
          position,
        });
      } else if (event.seq >= this.#from.seq) {
        frames.push({ type: 'event', event, position });
      }
    }
    if (this.#replayPending) this.#replay(replay, fresh);
    const seq = this.position.seq;
    for (const delta of fresh) {
      this.#deltaCursor = delta.id;
      // One row makes at most one frame: a position never stands between two parts of a row.
      for (const op of this.#deltaOps(delta)) frames.push({ ...op, position: { seq, delta: delta.id } });
    }
    return frames;
  }

  /**
   * Brings the views to where the resumed-from consumer was: its rows replayed with what the log said
   * then, nothing emitted. When it stood in a step whose rows are gone, that step is marked unknown.
   */
  #replay(replay: readonly LiveDelta[], fresh: readonly LiveDelta[]): void {
    this.#replayPending = false;
    for (const delta of replay) {
      this.#deltaCursor = delta.id;
      this.#deltaOps(delta);
    }
    this.#deltaCursor = Math.max(this.#deltaCursor, this.#from.delta);
    // The consumer had rows of a step still streaming: exact. Otherwise, if it had read past any row, the
    // step that answers next may have streamed rows it saw and the channel has since dropped (see #resumeCheck).
    if (this.#steps.size > 0 || this.#from.delta === 0) return;
    let oldest: { turn: number; step: number } | null = null;
    for (const d of [...replay, ...fresh])
      if (oldest === null || after(oldest, d)) oldest = { turn: d.turn, step: d.step };
    this.#resumeCheck = { oldest };
  }

  /** The ops one delta row makes (none for a stale or unknown row); updates the views either way. */
  #deltaOps(delta: LiveDelta): FollowOp[] {
    if (delta.kind === 'tool-progress') {
      // Its step's answer is logged (the tools run after it): progress goes by the call, not the step.
      const op = this.#progress(delta);
      return op !== null ? [op] : [];
    }
    if (delta.kind === 'limiter-wait') {
      // Only while its step's answer is not logged: a wait that ended is not news.
      if (!after(delta, this.#logged)) return [];
      return [
        {
          type: 'limiter-wait',
          turn: delta.turn,
          step: delta.step,
          reason: delta.text,
          ahead: delta.progress ?? 0,
          waitMs: delta.total ?? 0,
        },
      ];
    }
    // A kind from a newer writer is skipped, not mistaken for one of these.
    if (!MODEL_KINDS.has(delta.kind) || !after(delta, this.#logged)) return [];
    const key = stepKey(delta.turn, delta.step);
    let view = this.#steps.get(key);
    const order = view === undefined ? 1 : compareAttempts(delta, view.attempt);
    if (order < 0) return [];
    let restart = false;
    if (view === undefined || order > 0) {
      restart = view !== undefined;
      view = { attempt: attemptOf(delta), shown: '', toolNames: new Map() };
      this.#steps.set(key, view);
    }
    const output = {
      turn: delta.turn,
      step: delta.step,
      attempt: delta.attempt,
      ...(restart ? { restart: true as const } : {}),
    };
    if (delta.kind === 'text') {
      view.shown += delta.text;
      return [{ type: 'text', ...output, text: delta.text }];
    }
    if (delta.kind === 'reasoning') return [{ type: 'reasoning', ...output, text: delta.text }];
    if (delta.kind === 'usage') {
      const reported = parseUsageRow(delta.text);
      // An unreadable report still carries the restart, or a consumer would keep the void text.
      if (reported !== null) return [{ type: 'usage', ...output, ...reported }];
      return restart ? [{ type: 'text', ...output, text: '' }] : [];
    }
    const index = delta.index ?? 0;
    if (delta.name !== undefined) view.toolNames.set(index, delta.name);
    return [{ type: 'tool-delta', ...output, name: view.toolNames.get(index) ?? null }];
  }

  /** Which calls run, from the log: started, and neither ended nor left behind by the turn's end. */
  #trackCalls(event: SessionEvent): void {
    if (event.type === 'tool/start') {
      this.#running.set(callKey(event.turn, event.step, event.callId), {
        name: event.name,
        attempt: null,
        shown: null,
      });
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
    if (call === undefined) return null;
    const order = call.attempt === null ? 1 : compareAttempts(delta, call.attempt);
    if (order < 0) return null;
    if (order > 0) {
      call.attempt = attemptOf(delta);
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

/** The attempt a row names, without the rest of the row. */
function attemptOf(delta: LiveDelta): AttemptTag {
  return delta.attemptScheduledAt !== undefined
    ? { attempt: delta.attempt, attemptScheduledAt: delta.attemptScheduledAt }
    : { attempt: delta.attempt };
}

function stepKey(turn: number, step: number): string {
  return `${turn}.${step}`;
}

/** The kinds a model step streams. */
const MODEL_KINDS: ReadonlySet<string> = new Set<LiveDeltaKind>(['text', 'reasoning', 'tool-call', 'usage']);

function callKey(turn: number, step: number, callId: string): string {
  return `${turn}.${step}.${callId}`;
}

function after(delta: { turn: number; step: number }, logged: { turn: number; step: number }): boolean {
  return delta.turn > logged.turn || (delta.turn === logged.turn && delta.step > logged.step);
}
