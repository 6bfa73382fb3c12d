// The PostgreSQL session-log backend (pg Pool) for deployments with many workers: the same schema as
// SQLite, and races between processes settled by the unique constraints, not by a pre-check alone.
import pg from 'pg';
import type { SessionEvent } from '../core/events.js';
import {
  planAppend,
  prepareAppend,
  retryOnUniqueViolation,
  type ChainedRow,
  type PreparedAppend,
  type StoredRow,
} from './append-plan.js';
import { assertSeq, assertSessionId, listLimit, readRange, sessionNotFound } from './event-row.js';
import { listAfter } from './list-order.js';
import { inTransaction } from './pg-transaction.js';
import { rowsToEvents } from './rows-to-events.js';
import { SessionTails } from './session-tails.js';
import { assertChainDigest, ROOT_ANCHOR, type ChainLink, type StoredChain } from './log-chain.js';
import type { LogKey } from './log-key.js';
import type {
  AppendResult,
  CreateSessionOptions,
  ListOptions,
  ReadOptions,
  SessionStore,
  SessionSummary,
} from './session-store.js';

// `body` is TEXT, not jsonb: jsonb reorders keys, drops duplicate ones and renormalizes numbers, so the
// stored bytes would stop being the appended ones. The digest column covers integrity; nothing here
// queries inside bodies. Ids use the "C" collation: byte order, as in SQLite, and cheap equality.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS sessions (
  session_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
  created_at BIGINT NOT NULL,
  parent_session_id TEXT COLLATE "C",
  chain_anchor TEXT
);
CREATE TABLE IF NOT EXISTS events (
  session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (session_id),
  seq INTEGER NOT NULL CHECK (seq >= 0),
  type TEXT COLLATE "C" NOT NULL,
  key TEXT COLLATE "C" NOT NULL,
  message_id TEXT COLLATE "C" CHECK (message_id IS NULL OR type = 'inbox/enqueue'),
  digest TEXT NOT NULL,
  at BIGINT NOT NULL,
  body TEXT NOT NULL,
  chain TEXT,
  mac TEXT,
  PRIMARY KEY (session_id, seq),
  UNIQUE (session_id, key)
);
CREATE UNIQUE INDEX IF NOT EXISTS events_inbox_message_id ON events (session_id, message_id)
  WHERE message_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_newest_first ON sessions (created_at DESC, session_id DESC);
`;

/**
 * Columns added after the first release, by ALTER TABLE at open when missing (old rows keep NULL there).
 * Looked up first: even with IF NOT EXISTS, ALTER TABLE takes an exclusive lock on the table, which every
 * open would otherwise queue behind running appends for.
 */
const ADDED_COLUMNS: ReadonlyArray<readonly [table: string, column: string]> = [
  ['sessions', 'chain_anchor'],
  ['events', 'chain'],
  ['events', 'mac'],
];

/** Advisory lock key serializing schema creation, so concurrent first opens do not collide in the catalog. */
const SCHEMA_LOCK_KEY = 0x64685f73; // "dh_s"

const ROW_COLUMNS = 'seq, type, key, message_id AS "messageId", digest, at, body, chain';
/** The same columns of `events e` in a join. */
const JOINED_ROW_COLUMNS = 'e.seq, e.type, e.key, e.message_id AS "messageId", e.digest, e.at, e.body, e.chain';

/** unique_violation; serialization_failure and deadlock_detected, which a re-read also settles. */
const RETRYABLE_CODES = new Set(['23505', '40001', '40P01']);

export interface PostgresSessionStoreOptions {
  /** Connections in the pool (pg's default is 10). */
  readonly poolSize?: number;
  /** With a key, every inserted row also gets a MAC of its chain digest (see log-key.ts). */
  readonly logKey?: LogKey;
}

/**
 * The rows of one append, inserted only where row `$11` of the session carries chain `$12` (the row the first
 * new one links to) and is the last row: one statement, one round trip, atomic on its own. Another row there or
 * a row after it inserts nothing; a slot filled meanwhile, a used key or inbox messageId fails with 23505.
 */
const INSERT_AFTER_TAIL = `INSERT INTO events (session_id, seq, type, key, message_id, digest, at, body, chain, mac)
  SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[],
    $9::text[], $10::text[])
  WHERE EXISTS (SELECT 1 FROM events WHERE session_id = $1 AND seq = $11::int AND chain = $12::text)
    AND NOT EXISTS (SELECT 1 FROM events WHERE session_id = $1 AND seq > $11::int)`;

export class PostgresSessionStore implements SessionStore {
  private readonly pool: pg.Pool;
  private readonly logKey: LogKey | undefined;
  /** Where this store last saw each session's log end: an append there skips the reads (appendAfterTail). */
  private readonly tails = new SessionTails();
  private closed = false;

  private constructor(pool: pg.Pool, logKey: LogKey | undefined) {
    this.pool = pool;
    this.logKey = logKey;
  }

  /**
   * Connects and creates the schema if it is missing, in the connection's `search_path` schema (pass
   * `?options=-c%20search_path%3D<schema>` in the URL to use another one).
   */
  static async open(
    connectionString: string,
    options: PostgresSessionStoreOptions = {},
  ): Promise<PostgresSessionStore> {
    const pool = new pg.Pool({ connectionString, ...(options.poolSize !== undefined && { max: options.poolSize }) });
    // An idle pooled connection that dies (server restart) is dropped by the pool and replaced on the
    // next checkout; without a listener the 'error' event would crash the process instead.
    pool.on('error', () => {});
    try {
      await inTransaction(pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [SCHEMA_LOCK_KEY]);
        await client.query(SCHEMA);
        await addMissingColumns(client);
      });
    } catch (error) {
      await pool.end();
      throw error;
    }
    return new PostgresSessionStore(pool, options.logKey);
  }

  async create(sessionId: string, options: CreateSessionOptions): Promise<{ created: boolean }> {
    assertSessionId('sessionId', sessionId);
    assertSeq('createdAt', options.createdAt);
    if (options.parentSessionId !== undefined) assertSessionId('parentSessionId', options.parentSessionId);
    if (options.chainAnchor !== undefined) assertChainDigest('chainAnchor', options.chainAnchor);
    const result = await this.pool.query(
      `INSERT INTO sessions (session_id, created_at, parent_session_id, chain_anchor) VALUES ($1, $2, $3, $4)
       ON CONFLICT (session_id) DO NOTHING`,
      [sessionId, options.createdAt, options.parentSessionId ?? null, options.chainAnchor ?? ROOT_ANCHOR],
    );
    return { created: result.rowCount === 1 };
  }

  async append(sessionId: string, expectedSeq: number, events: readonly SessionEvent[]): Promise<AppendResult> {
    const prepared = prepareAppend(sessionId, expectedSeq, events);
    const fast = await this.appendAfterTail(prepared);
    if (fast !== null) return fast;
    const result = await retryOnUniqueViolation(sessionId, expectedSeq, isRetryable, () =>
      // REPEATABLE READ: the head and the rows the plan looks at come from one snapshot. A concurrent
      // writer that fills a slot after it makes our INSERT fail with 23505, and the retry re-reads.
      inTransaction(
        this.pool,
        (client) => appendAttempt(client, prepared, this.logKey),
        'BEGIN ISOLATION LEVEL REPEATABLE READ',
      ),
    );
    this.tails.appended(sessionId, result);
    return result;
  }

  /**
   * The common case in one statement: an append right after the tail this store last saw, planned against
   * that tail as if nothing else were stored (nothing can be: the log is contiguous and the slots are free,
   * or the insert fails). Null when the tail is unknown, or the database refused (a filled slot, a used key,
   * another row before it): then the full append reads what is stored and decides, exactly as without this.
   */
  private async appendAfterTail(prepared: PreparedAppend): Promise<AppendResult | null> {
    const { sessionId, expectedSeq } = prepared;
    const tail = this.tails.at(sessionId, expectedSeq);
    if (tail === undefined || prepared.rows.length === 0) return null;
    const stored = { head: expectedSeq, rows: [], anchor: null, lastChain: tail.lastChain };
    const plan = planAppend(prepared, stored, this.logKey);
    let inserted: number;
    try {
      const result = await this.pool.query({
        name: 'dh-append-after-tail',
        text: INSERT_AFTER_TAIL,
        values: [...insertColumns(sessionId, plan.inserts), expectedSeq - 1, tail.lastChain],
      });
      inserted = result.rowCount ?? 0;
    } catch (error) {
      this.tails.forget(sessionId);
      if (isRetryable(error) || isForeignKeyViolation(error)) return null;
      throw error;
    }
    if (inserted !== plan.inserts.length) {
      this.tails.forget(sessionId);
      return null;
    }
    this.tails.appended(sessionId, plan.result);
    return plan.result;
  }

  async read(sessionId: string, fromSeq?: number, toSeq?: number, options?: ReadOptions): Promise<SessionEvent[]> {
    assertSessionId('sessionId', sessionId);
    const { from, to } = readRange(fromSeq, toSeq);
    // From the session's row, so an empty range of a known session is one row of NULLs and an unknown
    // session no row at all: one round trip either way (a read that finds nothing new is the common one).
    const result = await this.pool.query<PgEventRow | NullRow>({
      name: 'dh-read',
      text: `SELECT ${JOINED_ROW_COLUMNS} FROM sessions s
       LEFT JOIN events e ON e.session_id = s.session_id AND e.seq >= $2::bigint
         AND ($3::bigint IS NULL OR e.seq < $3::bigint)
       WHERE s.session_id = $1 ORDER BY e.seq`,
      values: [sessionId, from, to],
    });
    if (result.rows.length === 0) throw sessionNotFound(sessionId);
    const stored = result.rows.filter((row): row is PgEventRow => row.seq !== null);
    const events = rowsToEvents(sessionId, from, stored.map(toEventRow), options?.verified);
    const onChain = options?.onChain;
    if (onChain) for (const row of stored) onChain(row.seq, row.chain);
    const last = stored.at(-1);
    if (to === undefined && last !== undefined) this.tails.read(sessionId, last.seq, last.chain);
    return events;
  }

  async readChain(sessionId: string, fromSeq?: number, toSeq?: number): Promise<StoredChain> {
    assertSessionId('sessionId', sessionId);
    const { from, to } = readRange(fromSeq, toSeq);
    // One statement, so the anchor and the rows come from one snapshot.
    const result = await this.pool.query<{
      anchor: string | null;
      links: Array<Omit<ChainLink, 'at'> & { at: string }> | null;
    }>(
      `SELECT s.chain_anchor AS anchor,
         (SELECT json_agg(json_build_object('seq', e.seq, 'at', e.at::text, 'digest', e.digest, 'chain', e.chain,
                 'mac', e.mac) ORDER BY e.seq)
            FROM events e
            WHERE e.session_id = s.session_id AND e.seq >= $2::bigint AND ($3::bigint IS NULL OR e.seq < $3::bigint))
           AS links
       FROM sessions s WHERE s.session_id = $1`,
      [sessionId, from, to],
    );
    const row = result.rows[0];
    if (row === undefined) throw sessionNotFound(sessionId);
    return { anchor: row.anchor, links: (row.links ?? []).map((link) => ({ ...link, at: Number(link.at) })) };
  }

  async head(sessionId: string): Promise<number> {
    assertSessionId('sessionId', sessionId);
    const { found, head } = await sessionHead(this.pool, sessionId);
    if (!found) throw sessionNotFound(sessionId);
    return head;
  }

  async list(options?: ListOptions): Promise<SessionSummary[]> {
    const limit = listLimit(options);
    const after = listAfter(options);
    // BIGINT arrives as a string; createdAt values are safe integers (checked by `create`).
    const result = await this.pool.query<Omit<SessionSummary, 'createdAt'> & { createdAt: string }>(
      `SELECT s.session_id AS "sessionId", s.created_at AS "createdAt", s.parent_session_id AS "parentSessionId",
         COALESCE((SELECT e.seq FROM events e WHERE e.session_id = s.session_id ORDER BY e.seq DESC LIMIT 1) + 1, 0)
           AS head
       FROM sessions s WHERE $2::bigint IS NULL OR (s.created_at, s.session_id) < ($2::bigint, $3::text)
       ORDER BY s.created_at DESC, s.session_id DESC LIMIT $1::bigint`,
      [limit, after?.createdAt ?? null, after?.sessionId ?? null],
    );
    return result.rows.map((r) => ({ ...r, createdAt: Number(r.createdAt) }));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

async function appendAttempt(
  client: pg.PoolClient,
  prepared: PreparedAppend,
  logKey: LogKey | undefined,
): Promise<AppendResult> {
  const { sessionId, expectedSeq } = prepared;
  // The head, the anchor and the last row's chain from this transaction's snapshot: a writer that fills the
  // head after it makes our INSERT fail (23505), and the retry links to (or returns) the winner's rows.
  const { found, head, anchor, lastChain } = await sessionHead(client, sessionId);
  if (!found) throw sessionNotFound(sessionId);
  const stored = await client.query<PgEventRow>({
    name: 'dh-append-stored-rows',
    text: `SELECT ${ROW_COLUMNS} FROM events WHERE session_id = $1
       AND ((seq >= $2::bigint AND seq < $3::bigint) OR key = ANY($4::text[]) OR message_id = ANY($5::text[]))`,
    values: [sessionId, expectedSeq, expectedSeq + prepared.rows.length, prepared.keys, prepared.messageIds],
  });
  const plan = planAppend(prepared, { head, rows: stored.rows.map(toEventRow), anchor, lastChain }, logKey);
  if (plan.inserts.length > 0) {
    // One statement for the whole batch, whatever its size (no per-row parameter limit).
    await client.query({
      name: 'dh-append-insert',
      text: `INSERT INTO events (session_id, seq, type, key, message_id, digest, at, body, chain, mac)
       SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[],
         $9::text[], $10::text[])`,
      values: insertColumns(sessionId, plan.inserts),
    });
  }
  return plan.result;
}

/** The insert's parameters: the session, then one array per column (unnest turns them into rows). */
function insertColumns(sessionId: string, rows: readonly ChainedRow[]): unknown[] {
  return [
    sessionId,
    rows.map((r) => r.seq),
    rows.map((r) => r.type),
    rows.map((r) => r.key),
    rows.map((r) => r.messageId),
    rows.map((r) => r.digest),
    rows.map((r) => r.at),
    rows.map((r) => r.body),
    rows.map((r) => r.chain),
    rows.map((r) => r.mac),
  ];
}

interface SessionHead {
  readonly found: boolean;
  readonly head: number;
  readonly anchor: string | null;
  /** The chain of row `head - 1` (null when there is none, or it was written before the chain). */
  readonly lastChain: string | null;
}

async function sessionHead(db: pg.Pool | pg.PoolClient, sessionId: string): Promise<SessionHead> {
  const result = await db.query<{ found: boolean; anchor: string | null; last: number | null; chain: string | null }>({
    name: 'dh-session-head',
    text: `SELECT s.found, s.anchor, l.seq AS last, l.chain
     FROM (SELECT EXISTS (SELECT 1 FROM sessions WHERE session_id = $1) AS found,
             (SELECT chain_anchor FROM sessions WHERE session_id = $1) AS anchor) s
     LEFT JOIN LATERAL (SELECT seq, chain FROM events WHERE session_id = $1 ORDER BY seq DESC LIMIT 1) l ON true`,
    values: [sessionId],
  });
  const row = result.rows[0];
  if (row === undefined) throw new Error('the session head query returned no row');
  return { found: row.found, head: row.last === null ? 0 : row.last + 1, anchor: row.anchor, lastChain: row.chain };
}

/** Adds the columns a schema created by an earlier release lacks (see ADDED_COLUMNS); reads only otherwise. */
async function addMissingColumns(client: pg.PoolClient): Promise<void> {
  const present = await client.query<{ table_name: string; column_name: string }>(
    `SELECT table_name, column_name FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name IN ('sessions', 'events')`,
  );
  const has = new Set(present.rows.map((r) => `${r.table_name}.${r.column_name}`));
  for (const [table, column] of ADDED_COLUMNS) {
    if (!has.has(`${table}.${column}`))
      await client.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${column} TEXT`);
  }
}

/** What a read returns for a known session with no row in the range (the LEFT JOIN's NULLs). */
type NullRow = { readonly [K in keyof PgEventRow]: null };

/** An `events` row as pg returns it: BIGINT arrives as a string (appended values are safe integers). */
type PgEventRow = Omit<StoredRow, 'at'> & { at: string };

function toEventRow(r: PgEventRow): StoredRow {
  return { ...r, at: Number(r.at) };
}

/** foreign_key_violation: the session is not there (the full append names it SESSION_NOT_FOUND). */
function isForeignKeyViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23503';
}

function isRetryable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRYABLE_CODES.has(code);
}
