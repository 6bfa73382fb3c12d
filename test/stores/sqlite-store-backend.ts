// The conformance suite's SQLite backend: a fresh database file, opened with the given options, and
// damage done behind the store's back on its own connection.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import { SqliteSessionStore, type SqliteSessionStoreOptions } from '../../src/stores/sqlite-session-store.js';
import type { StoreBackend } from './session-store-conformance.js';

export async function sqliteStoreBackend(options: SqliteSessionStoreOptions = {}): Promise<StoreBackend> {
  const dir = await mkdtemp(join(tmpdir(), 'dh-sqlite-'));
  const path = join(dir, 'sessions.db');
  const raw = (sql: string, ...params: unknown[]) => runBehindTheStore(path, sql, ...params);
  return {
    spec: path,
    open: (extra = {}) => Promise.resolve(SqliteSessionStore.open(path, { ...options, ...extra })),
    corruptBody: (sessionId, seq, body) =>
      raw('UPDATE events SET body = ? WHERE session_id = ? AND seq = ?', body, sessionId, seq),
    deleteRow: (sessionId, seq) => raw('DELETE FROM events WHERE session_id = ? AND seq = ?', sessionId, seq),
    clearChain: (sessionId) => {
      execBehindTheStore(path, 'UPDATE events SET chain = NULL, mac = NULL WHERE session_id = ?', sessionId);
      return raw('UPDATE sessions SET chain_anchor = NULL WHERE session_id = ?', sessionId);
    },
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Runs one statement on its own connection, behind the store's back; it must touch one row. */
export function runBehindTheStore(path: string, sql: string, ...params: unknown[]): Promise<void> {
  expect(execBehindTheStore(path, sql, ...params)).toBe(1);
  return Promise.resolve();
}

/** Runs one statement on its own connection, behind the store's back; returns how many rows it changed. */
export function execBehindTheStore(path: string, sql: string, ...params: unknown[]): number {
  const db = new Database(path);
  try {
    return db.prepare(sql).run(...params).changes;
  } finally {
    db.close();
  }
}
