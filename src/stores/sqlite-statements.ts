// The SQLite store's schema and statements: the tables (and the columns added to them since the first
// release), the column lists a row is read with, and every statement the store prepares.
import type Database from 'better-sqlite3';
import type { EventRow } from './event-row.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS sessions (
  session_id TEXT NOT NULL PRIMARY KEY,
  created_at INTEGER NOT NULL,
  parent_session_id TEXT,
  chain_anchor TEXT
) STRICT;
CREATE TABLE IF NOT EXISTS events (
  session_id TEXT NOT NULL REFERENCES sessions (session_id),
  seq INTEGER NOT NULL CHECK (seq >= 0),
  type TEXT NOT NULL,
  key TEXT NOT NULL,
  message_id TEXT CHECK (message_id IS NULL OR type = 'inbox/enqueue'),
  digest TEXT NOT NULL,
  at INTEGER NOT NULL,
  body TEXT NOT NULL,
  chain TEXT,
  mac TEXT,
  PRIMARY KEY (session_id, seq),
  UNIQUE (session_id, key)
) STRICT;
CREATE UNIQUE INDEX IF NOT EXISTS events_inbox_message_id ON events (session_id, message_id)
  WHERE message_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_newest_first ON sessions (created_at DESC, session_id DESC);
`;

/**
 * Columns added after the first release: a database created before them gets them by ALTER TABLE at open
 * (its old rows keep NULL there: they were written before the chain, and are never rewritten).
 */
const ADDED_COLUMNS: ReadonlyArray<readonly [table: string, column: string]> = [
  ['sessions', 'chain_anchor'],
  ['events', 'chain'],
  ['events', 'mac'],
];

const ROW_COLUMNS = 'seq, type, key, message_id AS messageId, digest, at, body, chain';

/**
 * What `read` selects, in the order `rowOfColumns` takes them: its statement returns each row as a plain
 * array (better-sqlite3's raw mode), about a third cheaper on a long log than an object with named keys.
 */
const READ_COLUMNS = 'seq, type, key, message_id, digest, at, body, chain';
export type ReadColumns = [
  seq: number,
  type: EventRow['type'],
  key: string,
  messageId: string | null,
  digest: string,
  at: number,
  body: string,
  chain: string | null,
];

export function rowOfColumns(columns: ReadColumns): EventRow {
  return {
    seq: columns[0],
    type: columns[1],
    key: columns[2],
    messageId: columns[3],
    digest: columns[4],
    at: columns[5],
    body: columns[6],
  };
}

/** Creates the tables and indexes a new database lacks and adds the columns an older one lacks. */
export function applySchema(db: Database.Database): void {
  db.exec(SCHEMA);
  addMissingColumns(db);
}

/** A prepared statement as the store uses it: positional parameters, rows cast by the caller. */
export type SqliteStatement = Database.Statement<unknown[], unknown>;

/**
 * Every statement the store runs. Spelled out rather than inferred: the inferred type names
 * better-sqlite3's internal namespace, which the declaration build (`npm run build`) cannot emit.
 */
export interface SqliteStatements {
  readonly insertSession: SqliteStatement;
  readonly selectSession: SqliteStatement;
  readonly lastSeq: SqliteStatement;
  readonly lastRow: SqliteStatement;
  readonly rowsInRange: SqliteStatement;
  readonly rowsByKeys: SqliteStatement;
  readonly rowsByMessageIds: SqliteStatement;
  readonly insertEvent: SqliteStatement;
  readonly readChain: SqliteStatement;
  /** In raw mode: each row is an array of READ_COLUMNS' values. */
  readonly readRange: SqliteStatement;
  readonly list: SqliteStatement;
  readonly listAfter: SqliteStatement;
}

/** Every statement the store runs, prepared once per connection. */
export function prepareStatements(db: Database.Database): SqliteStatements {
  return {
    insertSession: db.prepare(
      `INSERT INTO sessions (session_id, created_at, parent_session_id, chain_anchor) VALUES (?, ?, ?, ?)
       ON CONFLICT DO NOTHING`,
    ),
    selectSession: db.prepare('SELECT chain_anchor AS anchor FROM sessions WHERE session_id = ?'),
    lastSeq: db.prepare('SELECT seq FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 1'),
    lastRow: db.prepare('SELECT seq, chain FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 1'),
    rowsInRange: db.prepare(`SELECT ${ROW_COLUMNS} FROM events WHERE session_id = ? AND seq >= ? AND seq < ?`),
    rowsByKeys: db.prepare(
      `SELECT ${ROW_COLUMNS} FROM events WHERE session_id = ? AND key IN (SELECT value FROM json_each(?))`,
    ),
    rowsByMessageIds: db.prepare(
      `SELECT ${ROW_COLUMNS} FROM events WHERE session_id = ? AND message_id IN (SELECT value FROM json_each(?))`,
    ),
    insertEvent: db.prepare(
      `INSERT INTO events (session_id, seq, type, key, message_id, digest, at, body, chain, mac)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    readChain: db.prepare(
      'SELECT seq, at, digest, chain, mac FROM events WHERE session_id = ? AND seq >= ? AND seq < ? ORDER BY seq',
    ),
    readRange: db
      .prepare(`SELECT ${READ_COLUMNS} FROM events WHERE session_id = ? AND seq >= ? AND seq < ? ORDER BY seq`)
      .raw(true),
    list: db.prepare(
      `SELECT s.session_id AS sessionId, s.created_at AS createdAt, s.parent_session_id AS parentSessionId,
         COALESCE((SELECT e.seq FROM events e WHERE e.session_id = s.session_id ORDER BY e.seq DESC LIMIT 1) + 1, 0)
           AS head
       FROM sessions s ORDER BY s.created_at DESC, s.session_id DESC LIMIT ?`,
    ),
    listAfter: db.prepare(
      `SELECT s.session_id AS sessionId, s.created_at AS createdAt, s.parent_session_id AS parentSessionId,
         COALESCE((SELECT e.seq FROM events e WHERE e.session_id = s.session_id ORDER BY e.seq DESC LIMIT 1) + 1, 0)
           AS head
       FROM sessions s WHERE (s.created_at, s.session_id) < (?, ?)
       ORDER BY s.created_at DESC, s.session_id DESC LIMIT ?`,
    ),
  };
}

/** Adds the columns a database created by an earlier release lacks (see ADDED_COLUMNS); no-op otherwise. */
function addMissingColumns(db: Database.Database): void {
  for (const [table, column] of ADDED_COLUMNS) {
    const columns = db.pragma(`table_info(${table})`) as Array<{ name: string }>;
    if (!columns.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} TEXT`);
  }
}
