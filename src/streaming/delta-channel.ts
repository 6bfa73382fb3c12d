// The live side channel for streamed model output and running tools' progress: token deltas and
// progress updates go here, never into Temporal history or the session log. Rows are keyed by session,
// step and activity attempt (with when the attempt was scheduled, which orders attempts); ids only grow.

/**
 * What a streamed delta carries. `tool-call` deltas carry an argument fragment in `text`; `tool-progress`
 * rows carry a running tool call's progress (`progress`, `total`), its message in `text` ('' for none),
 * and the call's id and tool name. `limiter-wait` rows say a model step waits for the fleet's rate limiter:
 * the reason in `text`, the calls ahead in `progress`, the expected wait (ms) in `total`. `usage` rows carry
 * a streaming step's token counts (and cost) as JSON in `text` (usage-row.ts). Readers skip kinds they do
 * not know.
 */
export type LiveDeltaKind = 'text' | 'reasoning' | 'tool-call' | 'tool-progress' | 'limiter-wait' | 'usage';

/** A delta as an activity publishes it (consecutive model-output fragments may be coalesced). */
export interface LiveDeltaDraft {
  readonly sessionId: string;
  readonly turn: number;
  readonly step: number;
  /**
   * The publishing activity's attempt (1, 2, ...): the model activity's for model output, the tool
   * activity's for progress. A viewer that sees a later attempt for a step (or tool call) discards what
   * an earlier attempt streamed: that attempt's partial output is stale. Which is later is decided by
   * `attemptScheduledAt` where both rows carry it (attempt-order.ts): a step moved from its host's model
   * queue to the shared one runs as a new activity, whose attempt is 1 again.
   */
  readonly attempt: number;
  /** When Temporal scheduled the publishing attempt, epoch ms; absent from writers before it was recorded. */
  readonly attemptScheduledAt?: number;
  readonly kind: LiveDeltaKind;
  readonly text: string;
  /**
   * Tool-call deltas: the call's index in the answer, and its id and name once the stream has named them.
   * Tool-progress rows: the call's id and the tool's name.
   */
  readonly index?: number;
  readonly callId?: string;
  readonly name?: string;
  /** Tool-progress rows: units done, and of how many when the tool knows. */
  readonly progress?: number;
  readonly total?: number;
  /** Epoch milliseconds of publication. */
  readonly at: number;
}

export interface LiveDelta extends LiveDeltaDraft {
  /** Channel-wide, strictly increasing: the subscriber's cursor. */
  readonly id: number;
}

export interface DeltaChannel {
  /** Buffers a delta; buffered deltas are written within a few tens of milliseconds (never throws). */
  publish(delta: LiveDeltaDraft): void;
  /** Writes what is buffered now. */
  flush(): Promise<void>;
  /** The session's deltas with `id > afterId`, in id order. */
  read(sessionId: string, afterId: number, limit?: number): Promise<LiveDelta[]>;
  /** Resolves when the session may have new deltas, or after `timeoutMs` (whichever is first). */
  wait(sessionId: string, timeoutMs: number): Promise<void>;
  /** Deletes the session's deltas of steps before (turn, step): their answers are in the log. */
  pruneBefore(sessionId: string, turn: number, step: number): Promise<number>;
  /** How many delta rows the session has now (for measuring compaction). */
  count(sessionId: string): Promise<number>;
  close(): Promise<void>;
}

/** Flush interval of the publishing side: short enough to look live, long enough to batch fragments. */
export const PUBLISH_INTERVAL_MS = 25;
/** Deltas older than this are dropped whatever their step (a session idle for a day has its answer logged). */
export const DELTA_MAX_AGE_MS = 24 * 60 * 60 * 1000;
/** Safety cap: a session keeps at most this many delta rows (oldest go first). */
export const MAX_DELTAS_PER_SESSION = 5_000;

/**
 * Merges consecutive drafts of the same session, step, attempt, kind and tool call into one, so a
 * flush writes one row per run of fragments instead of one per token. Only model output is fragments;
 * progress updates and limiter waits are whole (a reason, a count), so each stays a row of its own: two
 * waits merged would read as one wait for the reason "rate-limitrate-limit". Usage reports are totals so
 * far: of a batch's reports for one step attempt only the latest is written, after the batch's output
 * (a provider that reports with every chunk would otherwise split every run of text).
 */
export function coalesce(drafts: readonly LiveDeltaDraft[]): LiveDeltaDraft[] {
  const out: LiveDeltaDraft[] = [];
  const usage = new Map<string, LiveDeltaDraft>();
  for (const d of drafts) {
    if (d.kind === 'usage') {
      const key = `${d.sessionId}\u0000${d.turn}.${d.step}.${d.attempt}.${d.attemptScheduledAt ?? ''}`;
      usage.delete(key);
      usage.set(key, d);
      continue;
    }
    const last = out.at(-1);
    if (
      last !== undefined &&
      FRAGMENT_KINDS.has(d.kind) &&
      last.sessionId === d.sessionId &&
      last.turn === d.turn &&
      last.step === d.step &&
      last.attempt === d.attempt &&
      last.attemptScheduledAt === d.attemptScheduledAt &&
      last.kind === d.kind &&
      last.index === d.index &&
      (d.callId === undefined || d.callId === last.callId) &&
      (d.name === undefined || d.name === last.name)
    ) {
      out[out.length - 1] = { ...last, text: last.text + d.text, at: d.at };
    } else {
      out.push(d);
    }
  }
  return [...out, ...usage.values()];
}

/** The kinds whose consecutive drafts are parts of one text (a model's streamed output). */
const FRAGMENT_KINDS: ReadonlySet<LiveDeltaKind> = new Set<LiveDeltaKind>(['text', 'reasoning', 'tool-call']);
