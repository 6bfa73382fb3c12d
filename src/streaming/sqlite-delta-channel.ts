// The SQLite side channel: deltas in their own db file next to the store (WAL; readers never block the
// worker), written in small batches and read by polling a session's rows past a cursor.
import Database from 'better-sqlite3';
import {
  DELTA_MAX_AGE_MS,
  MAX_DELTAS_PER_SESSION,
  type DeltaChannel,
  type LiveDelta,
  type LiveDeltaDraft,
} from './delta-channel.js';
import { DELTA_COLUMNS, DeltaBuffer, deltaValues, rowToDelta, type DeltaRow } from './delta-rows.js';

/** How often a subscriber looks for new rows. */
export const SQLITE_POLL_MS = 50;
const AGE_PRUNE_EVERY_MS = 60_000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS live_deltas (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  turn INTEGER NOT NULL,
  step INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  kind TEXT NOT NULL,
  text TEXT NOT NULL,
  tool_index INTEGER,
  call_id TEXT,
  name TEXT,
  at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS live_deltas_by_session ON live_deltas (session_id, id);
`;

/** The delta file that belongs to a SQLite store file: `sessions.db` → `sessions.live.db`. */
export function liveDeltaPathFor(storePath: string): string {
  return storePath.endsWith('.db') ? `${storePath.slice(0, -3)}.live.db` : `${storePath}.live.db`;
}

export class SqliteDeltaChannel implements DeltaChannel {
  readonly #db: Database.Database;
  readonly #onError: (error: unknown) => void;
  readonly #buffer = new DeltaBuffer((batch) => {
    this.#write(batch);
    return Promise.resolve();
  });
  #lastAgePrune = 0;
  #closed = false;

  private constructor(db: Database.Database, onError: (error: unknown) => void) {
    this.#db = db;
    this.#onError = onError;
  }

  static open(path: string, options: { onError?: (error: unknown) => void } = {}): SqliteDeltaChannel {
    const db = new Database(path);
    try {
      db.pragma('busy_timeout = 5000');
      db.pragma('journal_mode = WAL');
      // Deltas are disposable: the log is the record. Losing the last few on a crash costs nothing.
      db.pragma('synchronous = OFF');
      db.exec(SCHEMA);
    } catch (error) {
      db.close();
      throw error;
    }
    return new SqliteDeltaChannel(db, options.onError ?? (() => undefined));
  }

  publish(delta: LiveDeltaDraft): void {
    if (!this.#closed) this.#buffer.add(delta);
  }

  flush(): Promise<void> {
    return this.#buffer.flush();
  }

  read(sessionId: string, afterId: number, limit = 10_000): Promise<LiveDelta[]> {
    const rows = this.#db
      .prepare<[string, number, number], DeltaRow>(
        'SELECT * FROM live_deltas WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?',
      )
      .all(sessionId, afterId, limit);
    return Promise.resolve(rows.map(rowToDelta));
  }

  wait(_sessionId: string, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(timeoutMs, SQLITE_POLL_MS))));
  }

  pruneBefore(sessionId: string, turn: number, step: number): Promise<number> {
    const result = this.#db
      .prepare('DELETE FROM live_deltas WHERE session_id = ? AND (turn < ? OR (turn = ? AND step < ?))')
      .run(sessionId, turn, turn, step);
    return Promise.resolve(result.changes);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.flush();
    this.#closed = true;
    this.#db.close();
  }

  #write(batch: readonly LiveDeltaDraft[]): void {
    if (batch.length === 0 || this.#closed) return;
    try {
      const insert = this.#db.prepare(
        `INSERT INTO live_deltas (${DELTA_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      const cap = this.#db.prepare(
        `DELETE FROM live_deltas WHERE session_id = ? AND id <=
           (SELECT id FROM live_deltas WHERE session_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
      );
      const now = Date.now();
      const pruneAge = now - this.#lastAgePrune > AGE_PRUNE_EVERY_MS;
      this.#db.transaction(() => {
        for (const d of batch) insert.run(...deltaValues(d));
        for (const sessionId of new Set(batch.map((d) => d.sessionId)))
          cap.run(sessionId, sessionId, MAX_DELTAS_PER_SESSION);
        if (pruneAge) this.#db.prepare('DELETE FROM live_deltas WHERE at < ?').run(now - DELTA_MAX_AGE_MS);
      })();
      if (pruneAge) this.#lastAgePrune = now;
    } catch (error) {
      this.#onError(error);
    }
  }
}
