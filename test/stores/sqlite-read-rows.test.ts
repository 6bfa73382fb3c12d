// SQLite `read` fetches rows as plain arrays (better-sqlite3 raw mode) and maps them by position: what it
// hands to validation and to a `VerifiedRows` memo must still be each row's exact columns.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidEventError } from '../../src/core/errors.js';
import type { SessionEvent } from '../../src/core/events.js';
import type { EventRow } from '../../src/stores/event-row.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { VerifiedRows } from '../../src/stores/verified-rows.js';
import { T0, sampleLog } from '../helpers/event-builders.js';
import { runBehindTheStore } from './sqlite-store-backend.js';

/** A memo that also records every row the store asked it about. */
class RecordingRows extends VerifiedRows {
  looked: EventRow[] = [];
  override lookup(row: EventRow): SessionEvent | undefined {
    this.looked.push(row);
    return super.lookup(row);
  }
}

describe('SqliteSessionStore read rows', () => {
  let dir: string;
  let path: string;
  let store: SqliteSessionStore;
  const log = sampleLog('s1', 2);

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dh-sqlite-read-'));
    path = join(dir, 'sessions.db');
    store = SqliteSessionStore.open(path);
    await store.create('s1', { createdAt: T0 });
    await store.append('s1', 0, log);
  });
  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** The stored rows as named columns, read on a connection of their own. */
  const storedRows = (from = 0): EventRow[] => {
    const db = new Database(path, { readonly: true });
    try {
      return db
        .prepare(
          'SELECT seq, type, key, message_id AS messageId, digest, at, body FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq',
        )
        .all('s1', from) as EventRow[];
    } finally {
      db.close();
    }
  };
  // The statement runs synchronously; the promise is only the backend interface's shape.
  const behindTheBack = (sql: string, ...params: unknown[]) => void runBehindTheStore(path, sql, ...params);

  it('hands the memo each row as exactly its stored columns, null messageIds included', async () => {
    const memo = new RecordingRows();
    expect(await store.read('s1', 0, undefined, { verified: memo })).toEqual(log);
    const rows = storedRows();
    expect(rows.some((r) => r.messageId === null) && rows.some((r) => r.messageId !== null)).toBe(true);
    expect(memo.looked).toStrictEqual(rows);
    for (const row of memo.looked) expect(Object.keys(row)).toEqual(Object.keys(rows[0]!));

    memo.looked = [];
    expect(await store.read('s1', 3, 9, { verified: memo })).toEqual(log.slice(3, 9));
    expect(memo.looked).toStrictEqual(storedRows(3).slice(0, 6));
  });

  it('lets a second read reuse every remembered event, and re-validates a row changed in any column', async () => {
    const memo = new VerifiedRows();
    memo.beginRead();
    const first = await store.read('s1', 0, undefined, { verified: memo });
    expect(memo.validatedInRead.size).toBe(log.length);

    memo.beginRead();
    const second = await store.read('s1', 0, undefined, { verified: memo });
    expect(memo.validatedInRead.size).toBe(0);
    second.forEach((event, i) => expect(event).toBe(first[i]));

    // Another time on one row: the memo misses it, the read validates it again and returns the stored one.
    behindTheBack('UPDATE events SET at = at + 1 WHERE session_id = ? AND seq = ?', 's1', 2);
    memo.beginRead();
    const third = await store.read('s1', 0, undefined, { verified: memo });
    expect([...memo.validatedInRead]).toEqual([third[2]]);
    expect(third[2]).not.toBe(first[2]);
    third.forEach((event, i) => {
      if (i !== 2) expect(event).toBe(first[i]);
    });

    // A digest column that no longer matches: the same error as without the memo.
    behindTheBack("UPDATE events SET digest = 'sha256:00' WHERE session_id = ? AND seq = ?", 's1', 4);
    for (const read of [store.read('s1', 0, undefined, { verified: memo }), store.read('s1')]) {
      const error = await read.then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(InvalidEventError);
      expect((error as InvalidEventError).details).toMatchObject({ sessionId: 's1', seq: 4 });
      expect((error as InvalidEventError).message).toContain('its row says sha256:00');
    }
  });
});
