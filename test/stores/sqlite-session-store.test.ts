// The SessionStore conformance suite on SQLite (a fresh database file per test), plus what is
// specific to the SQLite backend.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { verifyChain } from '../../src/stores/log-chain.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { T0, sampleLog } from '../helpers/event-builders.js';
import { LEGACY_SQLITE_SCHEMA, legacyRowValues } from './legacy-schema.js';
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

  it('migrates a database written before the chain: old rows keep loading unchained, new ones chain after them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dh-sqlite-legacy-'));
    try {
      const path = join(dir, 'sessions.db');
      const log = sampleLog('old', 2);
      const legacy = new Database(path);
      legacy.exec(LEGACY_SQLITE_SCHEMA);
      legacy.prepare('INSERT INTO sessions (session_id, created_at) VALUES (?, ?)').run('old', T0);
      const insert = legacy.prepare(
        'INSERT INTO events (session_id, seq, type, key, message_id, digest, at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      );
      for (const event of log.slice(0, 6)) insert.run(...legacyRowValues('old', event));
      legacy.close();

      const store = SqliteSessionStore.open(path);
      expect(await store.read('old')).toEqual(log.slice(0, 6));
      const appended = await store.append('old', 6, log.slice(6));
      expect(appended.receipts.every((r) => r.chain !== null)).toBe(true);
      await store.close();

      // Opening again finds the columns in place; the old rows are never rewritten.
      const reopened = SqliteSessionStore.open(path);
      expect(await reopened.read('old')).toEqual(log);
      const chain = await reopened.readChain('old');
      expect(chain.anchor).toBeNull();
      expect(chain.links.map((l) => l.chain === null)).toEqual(log.map((e) => e.seq < 6));
      expect(verifyChain(chain)).toMatchObject({ ok: true, unchained: { from: 0, to: 5 }, broken: null });
      await reopened.close();
      const db = new Database(path);
      try {
        const columns = (table: string) =>
          (db.pragma(`table_info(${table})`) as Array<{ name: string }>).map((c) => c.name);
        expect(columns('events')).toEqual(expect.arrayContaining(['chain', 'mac']));
        expect(columns('sessions')).toContain('chain_anchor');
      } finally {
        db.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
