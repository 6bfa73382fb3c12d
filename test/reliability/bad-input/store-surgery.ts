// Damage done to a SQLite session store from outside the harness, the way a bad disk, a hand edit or a
// buggy migration would: a second connection rewrites one row's column, and counts rows without
// parsing them (a damaged log cannot be read through the store).
import Database from 'better-sqlite3';

export type EventColumn = 'body' | 'digest';

/** Overwrites one column of the row at `seq`; returns the old value. */
export function damageRow(
  storePath: string,
  sessionId: string,
  seq: number,
  column: EventColumn,
  value: string,
): string {
  const db = new Database(storePath);
  try {
    const row = db
      .prepare(`SELECT ${column} AS value FROM events WHERE session_id = ? AND seq = ?`)
      .get(sessionId, seq) as { value: string } | undefined;
    if (row === undefined) throw new Error(`${sessionId} has no row at seq ${seq}`);
    db.prepare(`UPDATE events SET ${column} = ? WHERE session_id = ? AND seq = ?`).run(value, sessionId, seq);
    return row.value;
  } finally {
    db.close();
  }
}

/** The stored rows of a session as (seq, type), straight from the table. */
export function rawRows(storePath: string, sessionId: string): Array<{ seq: number; type: string }> {
  const db = new Database(storePath, { readonly: true });
  try {
    return db.prepare('SELECT seq, type FROM events WHERE session_id = ? ORDER BY seq').all(sessionId) as Array<{
      seq: number;
      type: string;
    }>;
  } finally {
    db.close();
  }
}
