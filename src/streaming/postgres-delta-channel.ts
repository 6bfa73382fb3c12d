// The PostgreSQL side channel: deltas in their own table, written in small batches with a NOTIFY per
// session on commit; subscribers LISTEN and read a session's rows past their cursor when woken.
import { createRequire } from 'node:module';
import type pg from 'pg';
import {
  DELTA_MAX_AGE_MS,
  MAX_DELTAS_PER_SESSION,
  type DeltaChannel,
  type LiveDelta,
  type LiveDeltaDraft,
} from './delta-channel.js';
import {
  ADDED_DELTA_COLUMNS,
  DELTA_COLUMN_NAMES,
  DELTA_COLUMNS,
  DeltaBuffer,
  deltaValues,
  rowToDelta,
  type DeltaRow,
} from './delta-rows.js';

/** `pg`, loaded when a PostgreSQL channel is made: every CLI start on SQLite would pay ~40 ms for it. */
const loadPg = (): typeof pg => createRequire(import.meta.url)('pg') as typeof pg;

/** The NOTIFY channel; the payload is the session id. */
export const DELTA_NOTIFY_CHANNEL = 'dh_live_deltas';
const SCHEMA_LOCK_KEY = 0x64685f6c; // "dh_l"
/** The first key of the two-key advisory locks that order a session's delta writes. */
const DELTA_ORDER_LOCK_SPACE = 0x64686f72; // "dhor"
const AGE_PRUNE_EVERY_MS = 60_000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS dh_live_deltas (
  id BIGSERIAL PRIMARY KEY,
  session_id TEXT NOT NULL,
  turn INTEGER NOT NULL,
  step INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  kind TEXT NOT NULL,
  text TEXT NOT NULL,
  tool_index INTEGER,
  call_id TEXT,
  name TEXT,
  at BIGINT NOT NULL,
  progress DOUBLE PRECISION,
  total DOUBLE PRECISION,
  attempt_scheduled_at BIGINT
);
CREATE INDEX IF NOT EXISTS dh_live_deltas_by_session ON dh_live_deltas (session_id, id);
`;

export class PostgresDeltaChannel implements DeltaChannel {
  readonly #pool: pg.Pool;
  readonly #url: string;
  readonly #onError: (error: unknown) => void;
  #ready: Promise<void> | null = null;
  #writing: Promise<void> = Promise.resolve();
  readonly #buffer = new DeltaBuffer((batch) => this.#enqueueWrite(batch));
  #lastAgePrune = 0;
  #listener: Promise<pg.Client | null> | null = null;
  readonly #waiters = new Map<string, Set<() => void>>();
  #closed = false;

  constructor(url: string, options: { onError?: (error: unknown) => void } = {}) {
    this.#url = url;
    this.#onError = options.onError ?? (() => undefined);
    this.#pool = new (loadPg().Pool)({ connectionString: url, max: 4, allowExitOnIdle: true });
    this.#pool.on('error', () => {});
  }

  publish(delta: LiveDeltaDraft): void {
    if (!this.#closed) this.#buffer.add(delta);
  }

  flush(): Promise<void> {
    return this.#buffer.flush();
  }

  async read(sessionId: string, afterId: number, limit = 10_000): Promise<LiveDelta[]> {
    await this.#schema();
    const result = await this.#pool.query<DeltaRow>(
      'SELECT * FROM dh_live_deltas WHERE session_id = $1 AND id > $2 ORDER BY id LIMIT $3',
      [sessionId, afterId, limit],
    );
    return result.rows.map(rowToDelta);
  }

  async wait(sessionId: string, timeoutMs: number): Promise<void> {
    const listener = await this.#listen();
    if (listener === null) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(timeoutMs, 250)));
      return;
    }
    await new Promise<void>((resolve) => {
      const waiters = this.#waiters.get(sessionId) ?? new Set<() => void>();
      this.#waiters.set(sessionId, waiters);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0) this.#waiters.delete(sessionId);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      waiters.add(done);
    });
  }

  async pruneBefore(sessionId: string, turn: number, step: number): Promise<number> {
    await this.#schema();
    const result = await this.#pool.query(
      'DELETE FROM dh_live_deltas WHERE session_id = $1 AND (turn < $2 OR (turn = $2 AND step < $3))',
      [sessionId, turn, step],
    );
    return result.rowCount ?? 0;
  }

  async count(sessionId: string): Promise<number> {
    await this.#schema();
    const result = await this.#pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM dh_live_deltas WHERE session_id = $1',
      [sessionId],
    );
    return Number(result.rows[0]?.n ?? 0);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.flush();
    this.#closed = true;
    for (const waiters of this.#waiters.values()) for (const wake of [...waiters]) wake();
    const listener = this.#listener ? await this.#listener : null;
    await listener?.end().catch(() => undefined);
    await this.#pool.end().catch(() => undefined);
  }

  #schema(): Promise<void> {
    this.#ready ??= (async () => {
      const client = await this.#pool.connect();
      try {
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [SCHEMA_LOCK_KEY]);
        await client.query(SCHEMA);
        // A table created by an earlier version gains the columns added since (checked first: ALTER
        // TABLE locks the table against the writers even when it has nothing to add).
        const present = await client.query<{ column_name: string }>(
          `SELECT column_name FROM information_schema.columns
            WHERE table_name = 'dh_live_deltas' AND table_schema = current_schema()`,
        );
        const names = new Set(present.rows.map((row) => row.column_name));
        for (const column of ADDED_DELTA_COLUMNS) {
          if (!names.has(column.name))
            await client.query(`ALTER TABLE dh_live_deltas ADD COLUMN IF NOT EXISTS ${column.name} ${column.postgres}`);
        }
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    })().catch((error: unknown) => {
      this.#ready = null;
      throw error;
    });
    return this.#ready;
  }

  /** Writes run one after another, so a session's rows get ids in publication order. */
  #enqueueWrite(batch: readonly LiveDeltaDraft[]): Promise<void> {
    if (batch.length === 0) return this.#writing;
    this.#writing = this.#writing.then(() => this.#write(batch)).catch((error: unknown) => this.#onError(error));
    return this.#writing;
  }

  async #write(batch: readonly LiveDeltaDraft[]): Promise<void> {
    await this.#schema();
    const values: unknown[] = [];
    const width = DELTA_COLUMN_NAMES.length;
    const tuples = batch.map((d, i) => {
      values.push(...deltaValues(d));
      return `(${DELTA_COLUMN_NAMES.map((_, c) => `$${i * width + c + 1}`).join(', ')})`;
    });
    const sessions = [...new Set(batch.map((d) => d.sessionId))];
    const now = Date.now();
    const pruneAge = now - this.#lastAgePrune > AGE_PRUNE_EVERY_MS;
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN');
      // A session's rows must commit in id order, or a reader past a later id never sees an earlier one
      // that commits after it (two workers writing one session: a retried attempt and its zombie, two tool
      // calls). Holding the sessions' locks from before the ids are drawn to the commit keeps the order.
      for (const sessionId of [...sessions].sort())
        await client.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [DELTA_ORDER_LOCK_SPACE, sessionId]);
      await client.query(`INSERT INTO dh_live_deltas (${DELTA_COLUMNS}) VALUES ${tuples.join(', ')}`, values);
      for (const sessionId of sessions) {
        await client.query(
          `DELETE FROM dh_live_deltas WHERE session_id = $1 AND id <=
             (SELECT id FROM dh_live_deltas WHERE session_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)`,
          [sessionId, MAX_DELTAS_PER_SESSION],
        );
        await client.query('SELECT pg_notify($1, $2)', [DELTA_NOTIFY_CHANNEL, sessionId]);
      }
      if (pruneAge) await client.query('DELETE FROM dh_live_deltas WHERE at < $1', [now - DELTA_MAX_AGE_MS]);
      await client.query('COMMIT');
      if (pruneAge) this.#lastAgePrune = now;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** One dedicated connection LISTENs for the whole channel; null when it cannot (then waits are plain sleeps). */
  #listen(): Promise<pg.Client | null> {
    this.#listener ??= (async () => {
      await this.#schema();
      const client = new (loadPg().Client)({ connectionString: this.#url });
      client.on('error', () => {
        this.#listener = null;
      });
      client.on('notification', (message) => {
        if (message.channel !== DELTA_NOTIFY_CHANNEL || message.payload === undefined) return;
        for (const wake of [...(this.#waiters.get(message.payload) ?? [])]) wake();
      });
      await client.connect();
      await client.query(`LISTEN ${DELTA_NOTIFY_CHANNEL}`);
      return client;
    })().catch((error: unknown) => {
      this.#onError(error);
      return null;
    });
    return this.#listener;
  }
}
