// The SQLite session-log backend (better-sqlite3): one file per deployment, WAL mode. Appends are planned and
// applied under the write lock (IMMEDIATE); by default those of one event-loop turn share one transaction and
// one fsync (group commit), each in its own savepoint, and none is reported done before that commit.
import Database from 'better-sqlite3';
import type { SessionEvent } from '../core/events.js';
import {
  planAppend,
  prepareAppend,
  retryOnUniqueViolation,
  type ChainedRow,
  type PreparedAppend,
  type StoredRow,
  type StoredState,
} from './append-plan.js';
import { assertSeq, assertSessionId, listLimit, readRange, sessionNotFound } from './event-row.js';
import { listAfter } from './list-order.js';
import { assertChainDigest, ROOT_ANCHOR, type ChainLink, type StoredChain } from './log-chain.js';
import type { LogKey } from './log-key.js';
import { rowsToEvents } from './rows-to-events.js';
import { SessionTails } from './session-tails.js';
import {
  applySchema,
  prepareStatements,
  rowOfColumns,
  type ReadColumns,
  type SqliteStatements,
} from './sqlite-statements.js';
import type {
  AppendResult,
  CreateSessionOptions,
  ListOptions,
  ReadOptions,
  SessionStore,
  SessionSummary,
} from './session-store.js';

export interface SqliteSessionStoreOptions {
  /** How long a writer waits for another connection's write lock before failing with SQLITE_BUSY. */
  readonly busyTimeoutMs?: number;
  /**
   * Group commit (default true): appends made in the same event-loop turn are committed together, in one
   * transaction and one fsync, each in its own savepoint. False: one transaction (and fsync) per append.
   * Either way an append resolves only after its commit returned.
   */
  readonly groupCommit?: boolean;
  /**
   * Called after each COMMIT of appends with how many appends it committed (a group whose appends all
   * failed still commits, with 0), for tests and benchmarks that count transactions. Its throws are ignored.
   */
  readonly onCommit?: (appends: number) => void;
  /** With a key, every inserted row also gets a MAC of its chain digest (see log-key.ts). */
  readonly logKey?: LogKey;
}

/** At most this many appends, or about this many bytes of event rows, per group transaction. */
const MAX_GROUP_APPENDS = 256;
const MAX_GROUP_BYTES = 4 * 1024 * 1024;

/** An append waiting for the next group commit. */
interface QueuedAppend {
  readonly prepared: PreparedAppend;
  readonly bytes: number;
  readonly resolve: (result: AppendResult) => void;
  readonly reject: (error: Error) => void;
}

type Outcome = { readonly ok: true; readonly result: AppendResult } | { readonly ok: false; readonly error: Error };

export class SqliteSessionStore implements SessionStore {
  private readonly db: Database.Database;
  private readonly stmt: SqliteStatements;
  /** One append in a transaction of its own; inside an open transaction, in a savepoint instead. */
  private readonly appendTx: (prepared: PreparedAppend) => AppendResult;
  private readonly groupTx: (batch: readonly QueuedAppend[], outcomes: Outcome[]) => void;
  private readonly groupCommit: boolean;
  private readonly onCommit: ((appends: number) => void) | undefined;
  private readonly logKey: LogKey | undefined;
  /** Appends waiting for a group commit, in call order. */
  private queue: QueuedAppend[] = [];
  /** Where this store last saw each session's log end: an append there skips the reads (appendAfterTail). */
  private readonly tails = new SessionTails();
  /** Inserts planned rows in a savepoint of their own, so a refused one leaves nothing behind. */
  private readonly insertTx: (sessionId: string, rows: readonly ChainedRow[]) => void;
  private flushTimer: NodeJS.Immediate | undefined;

  private constructor(db: Database.Database, options: SqliteSessionStoreOptions) {
    this.db = db;
    this.stmt = prepareStatements(db);
    this.groupCommit = options.groupCommit ?? true;
    this.onCommit = options.onCommit;
    this.logKey = options.logKey;
    const tx = db.transaction((prepared: PreparedAppend) => this.appendInTransaction(prepared));
    // IMMEDIATE: take the write lock before reading the head, so no other connection can fill the slot
    // between the plan and the insert (a DEFERRED transaction would fail its lock upgrade instead).
    // Called inside the group transaction, the same function runs in a savepoint.
    this.appendTx = (prepared) => (db.inTransaction ? tx(prepared) : tx.immediate(prepared));
    const group = db.transaction((batch: readonly QueuedAppend[], outcomes: Outcome[]) =>
      this.runBatch(batch, outcomes),
    );
    this.groupTx = (batch, outcomes) => group.immediate(batch, outcomes);
    this.insertTx = db.transaction((sessionId: string, rows: readonly ChainedRow[]) =>
      this.insertRows(sessionId, rows),
    );
  }

  /** Opens (creating if needed) the store at `path`, or a private in-memory one for `:memory:`. */
  static open(path: string, options: SqliteSessionStoreOptions = {}): SqliteSessionStore {
    const db = new Database(path);
    try {
      // Set first: every later statement, including the WAL switch, waits for other connections' locks.
      db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 10_000}`);
      db.pragma('journal_mode = WAL');
      // FULL, not NORMAL: in WAL mode NORMAL may lose the last commits on power loss, and an append the
      // workflow has been told succeeded must survive it, or its history would cite events the log lost.
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
      db.transaction(() => {
        applySchema(db);
      }).immediate();
      return new SqliteSessionStore(db, options);
    } catch (error) {
      db.close();
      throw error;
    }
  }

  create(sessionId: string, options: CreateSessionOptions): Promise<{ created: boolean }> {
    return run(() => {
      assertSessionId('sessionId', sessionId);
      assertSeq('createdAt', options.createdAt);
      if (options.parentSessionId !== undefined) assertSessionId('parentSessionId', options.parentSessionId);
      if (options.chainAnchor !== undefined) assertChainDigest('chainAnchor', options.chainAnchor);
      const info = this.stmt.insertSession.run(
        sessionId,
        options.createdAt,
        options.parentSessionId ?? null,
        options.chainAnchor ?? ROOT_ANCHOR,
      );
      return { created: info.changes === 1 };
    });
  }

  append(sessionId: string, expectedSeq: number, events: readonly SessionEvent[]): Promise<AppendResult> {
    // A retry after a unique violation queues again, so it runs in a later group than the one it lost in.
    return retryOnUniqueViolation(sessionId, expectedSeq, isUniqueViolation, () => {
      let prepared: PreparedAppend;
      try {
        // Validated now, at the call, so a bad batch fails at once and never joins a group.
        prepared = prepareAppend(sessionId, expectedSeq, events);
      } catch (error) {
        return Promise.reject(asError(error));
      }
      if (!this.groupCommit || !this.db.open) return run(() => this.commitAlone(prepared));
      return new Promise<AppendResult>((resolve, reject) => {
        const bytes = prepared.rows.reduce((sum, row) => sum + row.body.length, 0);
        this.queue.push({ prepared, bytes, resolve, reject });
        this.flushTimer ??= setImmediate(() => this.flush());
      });
    });
  }

  read(sessionId: string, fromSeq?: number, toSeq?: number, options?: ReadOptions): Promise<SessionEvent[]> {
    return run(() => {
      assertSessionId('sessionId', sessionId);
      const { from, to } = readRange(fromSeq, toSeq);
      // One read transaction, so the rows and the session check see the same snapshot.
      return this.db.transaction(() => {
        const columns = this.stmt.readRange.all(sessionId, from, to ?? Number.MAX_SAFE_INTEGER) as ReadColumns[];
        const rows = columns.map(rowOfColumns);
        if (rows.length === 0 && this.stmt.selectSession.get(sessionId) === undefined) throw sessionNotFound(sessionId);
        const events = rowsToEvents(sessionId, from, rows, options?.verified);
        const onChain = options?.onChain;
        if (onChain) for (const row of columns) onChain(row[0], row[7]);
        const last = columns.at(-1);
        if (to === undefined && last !== undefined) this.tails.read(sessionId, last[0], last[7]);
        return events;
      })();
    });
  }

  readChain(sessionId: string, fromSeq?: number, toSeq?: number): Promise<StoredChain> {
    return run(() => {
      assertSessionId('sessionId', sessionId);
      const { from, to } = readRange(fromSeq, toSeq);
      return this.db.transaction(() => {
        const session = this.stmt.selectSession.get(sessionId) as { anchor: string | null } | undefined;
        if (session === undefined) throw sessionNotFound(sessionId);
        const links = this.stmt.readChain.all(sessionId, from, to ?? Number.MAX_SAFE_INTEGER) as ChainLink[];
        return { anchor: session.anchor, links };
      })();
    });
  }

  head(sessionId: string): Promise<number> {
    return run(() => {
      assertSessionId('sessionId', sessionId);
      return this.db.transaction(() => {
        if (this.stmt.selectSession.get(sessionId) === undefined) throw sessionNotFound(sessionId);
        return this.headOf(sessionId);
      })();
    });
  }

  list(options?: ListOptions): Promise<SessionSummary[]> {
    return run(() => {
      const limit = listLimit(options);
      const after = listAfter(options);
      // SQLite reads a negative LIMIT as "no limit".
      if (after) return this.stmt.listAfter.all(after.createdAt, after.sessionId, limit ?? -1) as SessionSummary[];
      return this.stmt.list.all(limit ?? -1) as SessionSummary[];
    });
  }

  close(): Promise<void> {
    return run(() => {
      // Pending appends are committed (or rejected) first, so no caller is left waiting.
      while (this.queue.length > 0) this.flush();
      if (this.db.open) this.db.close();
    });
  }

  /** One append, one transaction (the path without group commit, and after close, where it throws). */
  private commitAlone(prepared: PreparedAppend): AppendResult {
    const result = this.appendTx(prepared);
    this.tails.appended(prepared.sessionId, result);
    this.committed(1);
    return result;
  }

  /**
   * Commits the next group of queued appends in one IMMEDIATE transaction (one fsync) and settles their
   * promises after the COMMIT returned. An append that fails rolls back its own savepoint and rejects
   * alone; if the transaction as a whole fails (BEGIN, COMMIT, or SQLite aborting it), all of them reject.
   */
  private flush(): void {
    if (this.flushTimer !== undefined) clearImmediate(this.flushTimer);
    this.flushTimer = undefined;
    let count = 0;
    let bytes = 0;
    while (count < this.queue.length && count < MAX_GROUP_APPENDS) {
      const next = this.queue[count]!;
      if (count > 0 && bytes + next.bytes > MAX_GROUP_BYTES) break;
      bytes += next.bytes;
      count++;
    }
    const batch = this.queue.splice(0, count);
    // The rest waits for the next turn, so one flush never holds the event loop for long.
    if (this.queue.length > 0) this.flushTimer = setImmediate(() => this.flush());
    if (batch.length === 0) return;
    const outcomes: Outcome[] = [];
    try {
      // A group of one is a transaction of its own: the savepoint would add nothing but two statements.
      if (batch.length === 1) outcomes.push({ ok: true, result: this.appendTx(batch[0]!.prepared) });
      else this.groupTx(batch, outcomes);
    } catch (error) {
      // Nothing of the group is committed. An append that failed on its own keeps its own error.
      const failure = asError(error);
      batch.forEach((item, i) => {
        const outcome = outcomes[i];
        item.reject(outcome !== undefined && !outcome.ok ? outcome.error : failure);
      });
      return;
    }
    batch.forEach((item, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) this.tails.appended(item.prepared.sessionId, outcome.result);
      if (outcome.ok) item.resolve(outcome.result);
      else item.reject(outcome.error);
    });
    this.committed(outcomes.filter((outcome) => outcome.ok).length);
  }

  private committed(appends: number): void {
    try {
      this.onCommit?.(appends);
    } catch {
      // A counting hook; the appends are committed whatever it does.
    }
  }

  /** Inside the group transaction: each append in call order, each in a savepoint of its own. */
  private runBatch(batch: readonly QueuedAppend[], outcomes: Outcome[]): void {
    for (const item of batch) {
      try {
        outcomes.push({ ok: true, result: this.appendTx(item.prepared) });
      } catch (error) {
        const failure = asError(error);
        outcomes.push({ ok: false, error: failure });
        // Some errors (I/O, disk full, out of memory) make SQLite roll back the whole transaction: the
        // appends before this one are gone too, and the rest must not run outside the group.
        if (!this.db.inTransaction) throw failure;
      }
    }
  }

  private appendInTransaction(prepared: PreparedAppend): AppendResult {
    return this.appendAfterTail(prepared) ?? this.appendAfterReading(prepared);
  }

  /**
   * The common case without reading the log: an append right after the tail this store last saw, where the
   * stored log still ends with that very row (checked under the write lock), planned as if nothing else were
   * stored. Null when that does not hold, or when the inserts are refused (a used key or inbox messageId):
   * the full append then reads what is stored and decides, exactly as without this.
   */
  private appendAfterTail(prepared: PreparedAppend): AppendResult | null {
    const { sessionId, expectedSeq } = prepared;
    const tail = this.tails.at(sessionId, expectedSeq);
    if (tail === undefined || prepared.rows.length === 0) return null;
    const last = this.stmt.lastRow.get(sessionId) as { seq: number; chain: string | null } | undefined;
    if (last?.seq !== expectedSeq - 1 || last.chain !== tail.lastChain) return null;
    const stored = { head: expectedSeq, rows: [], anchor: null, lastChain: tail.lastChain };
    const plan = planAppend(prepared, stored, this.logKey);
    try {
      this.insertTx(sessionId, plan.inserts);
    } catch (error) {
      if (!isUniqueViolation(error) || !this.db.inTransaction) throw error;
      return null;
    }
    return plan.result;
  }

  private appendAfterReading(prepared: PreparedAppend): AppendResult {
    const { sessionId, expectedSeq, rows } = prepared;
    const session = this.stmt.selectSession.get(sessionId) as { anchor: string | null } | undefined;
    if (session === undefined) throw sessionNotFound(sessionId);
    const byRange = this.stmt.rowsInRange.all(sessionId, expectedSeq, expectedSeq + rows.length) as StoredRow[];
    const byKey = this.stmt.rowsByKeys.all(sessionId, JSON.stringify(prepared.keys)) as StoredRow[];
    const byMessageId = this.stmt.rowsByMessageIds.all(sessionId, JSON.stringify(prepared.messageIds)) as StoredRow[];
    // Read in this transaction (or savepoint), under the write lock: what the first new row links to is
    // the row just below the head as committed, or as an earlier append of the same group left it.
    const last = this.stmt.lastRow.get(sessionId) as { seq: number; chain: string | null } | undefined;
    const stored: StoredState = {
      head: last === undefined ? 0 : last.seq + 1,
      rows: [...byRange, ...byKey, ...byMessageId],
      anchor: session.anchor,
      lastChain: last?.chain ?? null,
    };
    const plan = planAppend(prepared, stored, this.logKey);
    this.insertRows(sessionId, plan.inserts);
    return plan.result;
  }

  private insertRows(sessionId: string, rows: readonly ChainedRow[]): void {
    for (const row of rows) {
      this.stmt.insertEvent.run(
        sessionId,
        row.seq,
        row.type,
        row.key,
        row.messageId,
        row.digest,
        row.at,
        row.body,
        row.chain,
        row.mac,
      );
    }
  }

  private headOf(sessionId: string): number {
    const last = this.stmt.lastSeq.get(sessionId) as { seq: number } | undefined;
    return last === undefined ? 0 : last.seq + 1;
  }
}

/** better-sqlite3 is synchronous; the contract is async, and a throw must become a rejection. */
function run<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(asError(error));
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
