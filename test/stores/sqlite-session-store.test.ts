// The SessionStore conformance suite on SQLite (a fresh database file per test), plus what is
// specific to the SQLite backend.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { T0, sampleLog } from '../helpers/event-builders.js';
import { describeSessionStoreConformance } from './session-store-conformance.js';
import { sqliteStoreBackend } from './sqlite-store-backend.js';

describeSessionStoreConformance('SqliteSessionStore', () => sqliteStoreBackend());

describe('SqliteSessionStore', () => {
  it('works in memory', async () => {
    const store = SqliteSessionStore.open(':memory:');
    const log = sampleLog('s1');
    await store.create('s1', { createdAt: T0 });
    await store.append('s1', 0, log);
    expect(await store.read('s1')).toEqual(log);
    await store.close();
    await store.close(); // idempotent
  });

  it('puts the database file in WAL mode and enforces the schema constraints itself', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dh-sqlite-'));
    try {
      const path = join(dir, 'sessions.db');
      const store = SqliteSessionStore.open(path);
      await store.create('s1', { createdAt: T0 });
      await store.append('s1', 0, sampleLog('s1', 1));
      await store.close();
      const db = new Database(path);
      try {
        expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
        const copy = db.prepare(
          `INSERT INTO events (session_id, seq, type, key, message_id, digest, at, body)
           SELECT session_id, ?, type, key || ?, message_id, digest, at, body FROM events
           WHERE session_id = 's1' AND seq = ?`,
        );
        // the same key or inbox messageId at another seq is refused by the database, not only by the store
        expect(() => copy.run(100, '', 2)).toThrow(/UNIQUE constraint failed: events.session_id, events.key/);
        expect(() => copy.run(100, '-copy', 1)).toThrow(
          /UNIQUE constraint failed: events.session_id, events.message_id/,
        );
        expect(() => copy.run(1, '-copy', 2)).toThrow(/UNIQUE constraint failed: events.session_id, events.seq/);
      } finally {
        db.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
