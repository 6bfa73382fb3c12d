// The SQLite side channel: deltas in their own db file next to the store (WAL; readers never block the
// worker), written in small batches and read past a cursor when the file changes (or every 50 ms).
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import Database from 'better-sqlite3';
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

/** How often a subscriber looks for new rows when no change notice woke it. */
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
  at INTEGER NOT NULL,
  progress REAL,
  total REAL,
  attempt_scheduled_at INTEGER
);
CREATE INDEX IF NOT EXISTS live_deltas_by_session ON live_deltas (session_id, id);
`;

/**
 * Creates the table, or gives one created by an earlier version the columns added since. A current
 * table is only read; a change happens under the write lock (BEGIN IMMEDIATE; busy_timeout waits for
 * it), re-checked there, so two processes opening the file at once do not both add a column.
 */
function ensureSchema(db: Database.Database): void {
  const current = (): boolean => {
    const present = tableColumns(db);
    return present.size > 0 && ADDED_DELTA_COLUMNS.every((column) => present.has(column.name));
  };
  if (current()) return;
  db.transaction(() => {
    db.exec(SCHEMA);
    const present = tableColumns(db);
    for (const column of ADDED_DELTA_COLUMNS) {
      if (!present.has(column.name)) db.exec(`ALTER TABLE live_deltas ADD COLUMN ${column.name} ${column.sqlite}`);
    }
  }).immediate();
}

function tableColumns(db: Database.Database): Set<string> {
  return new Set(
    db
      .prepare<[], { name: string }>('PRAGMA table_info(live_deltas)')
      .all()
      .map((column) => column.name),
  );
}

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
  readonly #path: string;
  /** Watches the file's folder for writes to it (its WAL); null until the first wait, or when unavailable. */
  #watcher: FSWatcher | null | undefined;
  readonly #waiters = new Set<() => void>();

  readonly #pollMs: number;

  private constructor(db: Database.Database, path: string, onError: (error: unknown) => void, pollMs: number) {
    this.#db = db;
    this.#path = path;
    this.#onError = onError;
    this.#pollMs = pollMs;
  }

  /** `pollMs`: the longest a `wait` lasts without a change notice (default SQLITE_POLL_MS). */
  static open(path: string, options: { onError?: (error: unknown) => void; pollMs?: number } = {}): SqliteDeltaChannel {
    const db = new Database(path);
    try {
      db.pragma('busy_timeout = 5000');
      db.pragma('journal_mode = WAL');
      // Deltas are disposable: the log is the record. Losing the last few on a crash costs nothing.
      db.pragma('synchronous = OFF');
      ensureSchema(db);
    } catch (error) {
      db.close();
      throw error;
    }
    return new SqliteDeltaChannel(db, path, options.onError ?? (() => undefined), options.pollMs ?? SQLITE_POLL_MS);
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

  /**
   * Resolves when the delta file is written to (another process's worker publishing), or after at most
   * SQLITE_POLL_MS: a reader in another process sees a first token within a millisecond or so, not half a
   * poll interval later. The timer stays as the fallback where the folder cannot be watched.
   */
  wait(_sessionId: string, timeoutMs: number): Promise<void> {
    this.#watch();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, Math.min(timeoutMs, this.#pollMs)));
      this.#waiters.add(done);
    });
  }

  #watch(): void {
    if (this.#watcher !== undefined || this.#path === ':memory:') return;
    const name = basename(this.#path);
    try {
      this.#watcher = watch(dirname(this.#path), { persistent: false }, (_event, file) => {
        // The db file or its WAL; not the shared-memory index, which readers touch too.
        if (file !== name && file !== `${name}-wal`) return;
        for (const wake of [...this.#waiters]) wake();
      });
      this.#watcher.on('error', () => {
        this.#watcher?.close();
        this.#watcher = null;
      });
    } catch {
      this.#watcher = null;
    }
  }

  pruneBefore(sessionId: string, turn: number, step: number): Promise<number> {
    const result = this.#db
      .prepare('DELETE FROM live_deltas WHERE session_id = ? AND (turn < ? OR (turn = ? AND step < ?))')
      .run(sessionId, turn, turn, step);
    return Promise.resolve(result.changes);
  }

  count(sessionId: string): Promise<number> {
    const row = this.#db
      .prepare<[string], { n: number }>('SELECT count(*) AS n FROM live_deltas WHERE session_id = ?')
      .get(sessionId);
    return Promise.resolve(row?.n ?? 0);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.flush();
    this.#closed = true;
    this.#watcher?.close();
    for (const wake of [...this.#waiters]) wake();
    this.#db.close();
  }

  #write(batch: readonly LiveDeltaDraft[]): void {
    if (batch.length === 0 || this.#closed) return;
    try {
      const insert = this.#db.prepare(
        `INSERT INTO live_deltas (${DELTA_COLUMNS}) VALUES (${DELTA_COLUMN_NAMES.map(() => '?').join(', ')})`,
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
