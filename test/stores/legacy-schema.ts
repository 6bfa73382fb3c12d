// The stores' schemas as released before the hash chain (no chain, mac or chain_anchor columns), and the
// rows the stores of that release wrote, for the migration tests of both backends.
import type { SessionEvent } from '../../src/core/events.js';
import { eventToRow } from '../../src/stores/event-row.js';

const TABLES = (sqlite: boolean) => `
CREATE TABLE sessions (
  session_id TEXT${sqlite ? '' : ' COLLATE "C"'} NOT NULL PRIMARY KEY,
  created_at ${sqlite ? 'INTEGER' : 'BIGINT'} NOT NULL,
  parent_session_id TEXT${sqlite ? '' : ' COLLATE "C"'}
)${sqlite ? ' STRICT' : ''};
CREATE TABLE events (
  session_id TEXT${sqlite ? '' : ' COLLATE "C"'} NOT NULL REFERENCES sessions (session_id),
  seq INTEGER NOT NULL CHECK (seq >= 0),
  type TEXT${sqlite ? '' : ' COLLATE "C"'} NOT NULL,
  key TEXT${sqlite ? '' : ' COLLATE "C"'} NOT NULL,
  message_id TEXT${sqlite ? '' : ' COLLATE "C"'} CHECK (message_id IS NULL OR type = 'inbox/enqueue'),
  digest TEXT NOT NULL,
  at ${sqlite ? 'INTEGER' : 'BIGINT'} NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (session_id, seq),
  UNIQUE (session_id, key)
)${sqlite ? ' STRICT' : ''};
CREATE UNIQUE INDEX events_inbox_message_id ON events (session_id, message_id) WHERE message_id IS NOT NULL;
CREATE INDEX sessions_newest_first ON sessions (created_at DESC, session_id DESC);
`;

export const LEGACY_SQLITE_SCHEMA = TABLES(true);
export const LEGACY_POSTGRES_SCHEMA = TABLES(false);

/** The values of an old-release `events` row, in column order (session_id, seq, type, key, message_id, digest, at, body). */
export function legacyRowValues(sessionId: string, event: SessionEvent): unknown[] {
  const row = eventToRow(event);
  return [sessionId, row.seq, row.type, row.key, row.messageId, row.digest, row.at, row.body];
}
