// Choosing the backend from a store spec, and the errors for specs that cannot work.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { DhError } from '../../src/core/errors.js';
import { STORE_SPEC_INVALID, openSessionStore } from '../../src/stores/open-session-store.js';
import { PostgresSessionStore } from '../../src/stores/postgres-session-store.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { T0, sampleLog } from '../helpers/event-builders.js';

describe('openSessionStore', () => {
  it('opens PostgreSQL for postgres:// and postgresql:// URLs', async () => {
    const url = inject('postgresUrl');
    for (const spec of [url, url.replace(/^postgresql:/, 'postgres:')]) {
      const store = await openSessionStore(spec);
      try {
        expect(store).toBeInstanceOf(PostgresSessionStore);
        await store.list({ limit: 1 });
      } finally {
        await store.close();
      }
    }
  });

  it('opens SQLite for a file path and for :memory:', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dh-open-'));
    try {
      for (const spec of [join(dir, 'sessions.db'), ':memory:']) {
        const store = await openSessionStore(spec);
        try {
          expect(store).toBeInstanceOf(SqliteSessionStore);
          await store.create('s1', { createdAt: T0 });
          await store.append('s1', 0, sampleLog('s1', 1));
          expect(await store.head('s1')).toBe(9);
        } finally {
          await store.close();
        }
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses an empty spec, an unknown scheme, an unusable path and an unreachable server', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dh-open-'));
    try {
      const cases: Array<[string, RegExp]> = [
        ['  ', /empty/],
        ['mysql://localhost/db', /unsupported scheme "mysql:\/\/"/],
        [join(dir, 'missing-dir', 'sessions.db'), /cannot open SQLite file/],
        [dir, /cannot open SQLite file/],
        ['postgresql://nobody:secret@127.0.0.1:1/none', /cannot open PostgreSQL/],
      ];
      for (const [spec, message] of cases) {
        const error = await openSessionStore(spec).then(
          () => null,
          (e: unknown) => e,
        );
        expect(error, spec).toBeInstanceOf(DhError);
        expect((error as DhError).code).toBe(STORE_SPEC_INVALID);
        expect((error as DhError).message).toMatch(message);
        expect((error as DhError).message).not.toContain('secret');
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
