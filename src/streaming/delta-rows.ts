// What both SQL delta channels share: the row shape of a stored delta (SQLite and PostgreSQL name the
// same columns; PostgreSQL returns BIGINT as text), and the publishing side's short batching buffer.
// The row format only grows by nullable columns added at the end (`progress`, `total` for tool
// progress, `attempt_scheduled_at` for ordering attempts): rows and writers from before them read and
// insert as they did, readers ignore what they do not name.
import {
  coalesce,
  PUBLISH_INTERVAL_MS,
  type LiveDelta,
  type LiveDeltaDraft,
  type LiveDeltaKind,
} from './delta-channel.js';

/** The columns of a delta row, in insert order (the table's `id` comes first and is generated). */
export const DELTA_COLUMN_NAMES = [
  'session_id',
  'turn',
  'step',
  'attempt',
  'kind',
  'text',
  'tool_index',
  'call_id',
  'name',
  'at',
  'progress',
  'total',
  'attempt_scheduled_at',
] as const;
export const DELTA_COLUMNS = DELTA_COLUMN_NAMES.join(', ');

/**
 * Columns added after the first release of the table, each nullable, with the type per database: an
 * existing table gains them when a channel of this version opens it (see the channels' schema step).
 */
export const ADDED_DELTA_COLUMNS = [
  { name: 'progress', sqlite: 'REAL', postgres: 'DOUBLE PRECISION' },
  { name: 'total', sqlite: 'REAL', postgres: 'DOUBLE PRECISION' },
  { name: 'attempt_scheduled_at', sqlite: 'INTEGER', postgres: 'BIGINT' },
] as const;

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
  /** Absent only where a table has not gained the column (a channel of this version adds it on open). */
  readonly progress?: number | null;
  readonly total?: number | null;
  /** Epoch ms; PostgreSQL returns BIGINT as text. */
  readonly attempt_scheduled_at?: number | string | null;
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
    d.progress ?? null,
    d.total ?? null,
    d.attemptScheduledAt ?? null,
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
    ...(row.progress != null ? { progress: Number(row.progress) } : {}),
    ...(row.total != null ? { total: Number(row.total) } : {}),
    ...(row.attempt_scheduled_at != null ? { attemptScheduledAt: Number(row.attempt_scheduled_at) } : {}),
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
