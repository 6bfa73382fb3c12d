// What both SQL delta channels share: the row shape of a stored delta (SQLite and PostgreSQL name the
// same columns; PostgreSQL returns BIGINT as text), and the publishing side's short batching buffer.
import {
  coalesce,
  PUBLISH_INTERVAL_MS,
  type LiveDelta,
  type LiveDeltaDraft,
  type LiveDeltaKind,
} from './delta-channel.js';

/** The columns of a delta row, in insert order (the table's `id` comes first and is generated). */
export const DELTA_COLUMNS = 'session_id, turn, step, attempt, kind, text, tool_index, call_id, name, at';

export interface DeltaRow {
  readonly id: number | string;
  readonly session_id: string;
  readonly turn: number;
  readonly step: number;
  readonly attempt: number;
  readonly kind: string;
  readonly text: string;
  readonly tool_index: number | null;
  readonly call_id: string | null;
  readonly name: string | null;
  readonly at: number | string;
}

/** The values of one draft, in DELTA_COLUMNS order. */
export function deltaValues(d: LiveDeltaDraft): unknown[] {
  return [
    d.sessionId,
    d.turn,
    d.step,
    d.attempt,
    d.kind,
    d.text,
    d.index ?? null,
    d.callId ?? null,
    d.name ?? null,
    d.at,
  ];
}

export function rowToDelta(row: DeltaRow): LiveDelta {
  return {
    id: Number(row.id),
    sessionId: row.session_id,
    turn: row.turn,
    step: row.step,
    attempt: row.attempt,
    kind: row.kind as LiveDeltaKind,
    text: row.text,
    ...(row.tool_index !== null ? { index: row.tool_index } : {}),
    ...(row.call_id !== null ? { callId: row.call_id } : {}),
    ...(row.name !== null ? { name: row.name } : {}),
    at: Number(row.at),
  };
}

/**
 * Collects published drafts and hands them to `write`: the first delta after a quiet spell at once (a
 * reader sees a step's first token without waiting), the ones that follow coalesced, at most one write
 * every PUBLISH_INTERVAL_MS (or at once on `flush`). The timer never keeps the process alive.
 */
export class DeltaBuffer {
  #drafts: LiveDeltaDraft[] = [];
  #timer: NodeJS.Timeout | null = null;

  constructor(private readonly write: (batch: LiveDeltaDraft[]) => Promise<void>) {}

  add(delta: LiveDeltaDraft): void {
    this.#drafts.push(delta);
    if (this.#timer !== null) return;
    void this.flush();
    this.#arm();
  }

  /** One coalescing window: what arrived during it is written when it ends, and opens the next one. */
  #arm(): void {
    this.#timer = setTimeout(() => {
      this.#timer = null;
      if (this.#drafts.length === 0) return;
      void this.flush();
      this.#arm();
    }, PUBLISH_INTERVAL_MS);
    this.#timer.unref();
  }

  /** Writes what is buffered now (an empty batch is not written). */
  flush(): Promise<void> {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    const batch = coalesce(this.#drafts);
    this.#drafts = [];
    return this.write(batch);
  }
}
