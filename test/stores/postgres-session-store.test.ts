// The SessionStore conformance suite on PostgreSQL (a fresh schema per test in the database the global
// setup provides), plus what is specific to the PostgreSQL backend.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { PostgresSessionStore } from '../../src/stores/postgres-session-store.js';
import { T0, sampleLog } from '../helpers/event-builders.js';
import { describeSessionStoreConformance } from './session-store-conformance.js';

const baseUrl = inject('postgresUrl');

/** A new empty schema, the URL whose connections use it, and an admin connection to reach behind the store. */
async function freshSchema() {
  const schema = `dh_test_${randomUUID().replaceAll('-', '')}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const url = new URL(baseUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    schema,
    admin,
    url: url.toString(),
    drop: async () => {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    },
  };
}

describeSessionStoreConformance('PostgresSessionStore', async () => {
  const { schema, admin, url, drop } = await freshSchema();
  return {
    spec: url,
    // Small pools: several instances race each other, each on its own connections.
    open: () => PostgresSessionStore.open(url, { poolSize: 3 }),
    corruptBody: async (sessionId, seq, body) => {
      const sql = `UPDATE ${schema}.events SET body = $3 WHERE session_id = $1 AND seq = $2`;
      expect((await admin.query(sql, [sessionId, seq, body])).rowCount).toBe(1);
    },
    deleteRow: async (sessionId, seq) => {
      const sql = `DELETE FROM ${schema}.events WHERE session_id = $1 AND seq = $2`;
      expect((await admin.query(sql, [sessionId, seq])).rowCount).toBe(1);
    },
    dispose: drop,
  };
});

describe('PostgresSessionStore', () => {
  it('survives concurrent first opens of an empty schema', async () => {
    const { url, drop } = await freshSchema();
    const stores = await Promise.all(Array.from({ length: 6 }, () => PostgresSessionStore.open(url, { poolSize: 1 })));
    try {
      await stores[0]!.create('s1', { createdAt: T0 });
      await stores[0]!.append('s1', 0, sampleLog('s1', 1));
      expect(await stores[5]!.read('s1')).toEqual(sampleLog('s1', 1));
    } finally {
      for (const store of stores) await store.close();
      await drop();
    }
  });

  it('stores bodies as the appended text and enforces the unique constraints in the database', async () => {
    const { schema, admin, url, drop } = await freshSchema();
    const store = await PostgresSessionStore.open(url);
    try {
      const log = sampleLog('s1', 1);
      await store.create('s1', { createdAt: T0 });
      await store.append('s1', 0, log);
      const bodies = await admin.query<{ body: string }>(
        `SELECT body FROM ${schema}.events WHERE session_id = 's1' ORDER BY seq`,
      );
      expect(bodies.rows.map((r) => r.body)).toEqual(log.map((e) => JSON.stringify(e)));
      const copy = `INSERT INTO ${schema}.events (session_id, seq, type, key, message_id, digest, at, body)
        SELECT session_id, $1, type, key || $2, message_id, digest, at, body FROM ${schema}.events
        WHERE session_id = 's1' AND seq = $3`;
      await expect(admin.query(copy, [100, '', 2])).rejects.toMatchObject({ code: '23505' });
      await expect(admin.query(copy, [100, '-copy', 1])).rejects.toMatchObject({
        code: '23505',
        constraint: 'events_inbox_message_id',
      });
      await expect(admin.query(copy, [1, '-copy', 2])).rejects.toMatchObject({ code: '23505' });
    } finally {
      await store.close();
      await drop();
    }
  });
});
