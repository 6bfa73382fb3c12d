// The SessionStore conformance suite on PostgreSQL (a fresh schema per test in the database the global
// setup provides), plus what is specific to the PostgreSQL backend.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { verifyChain } from '../../src/stores/log-chain.js';
import { PostgresSessionStore } from '../../src/stores/postgres-session-store.js';
import { T0, sampleLog } from '../helpers/event-builders.js';
import { LEGACY_POSTGRES_SCHEMA, legacyRowValues } from './legacy-schema.js';
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
    open: (extra = {}) => PostgresSessionStore.open(url, { poolSize: 3, ...extra }),
    corruptBody: async (sessionId, seq, body) => {
      const sql = `UPDATE ${schema}.events SET body = $3 WHERE session_id = $1 AND seq = $2`;
      expect((await admin.query(sql, [sessionId, seq, body])).rowCount).toBe(1);
    },
    deleteRow: async (sessionId, seq) => {
      const sql = `DELETE FROM ${schema}.events WHERE session_id = $1 AND seq = $2`;
      expect((await admin.query(sql, [sessionId, seq])).rowCount).toBe(1);
    },
    clearChain: async (sessionId) => {
      await admin.query(`UPDATE ${schema}.events SET chain = NULL, mac = NULL WHERE session_id = $1`, [sessionId]);
      await admin.query(`UPDATE ${schema}.sessions SET chain_anchor = NULL WHERE session_id = $1`, [sessionId]);
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

  it('migrates a schema written before the chain: old rows keep loading unchained, new ones chain after them', async () => {
    const { schema, admin, url, drop } = await freshSchema();
    try {
      const log = sampleLog('old', 2);
      await admin.query(`SET search_path = ${schema}`);
      await admin.query(LEGACY_POSTGRES_SCHEMA);
      await admin.query('INSERT INTO sessions (session_id, created_at) VALUES ($1, $2)', ['old', T0]);
      for (const event of log.slice(0, 6)) {
        await admin.query(
          'INSERT INTO events (session_id, seq, type, key, message_id, digest, at, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
          legacyRowValues('old', event),
        );
      }
      // Concurrent first opens of the old schema: each adds what is missing under the schema lock.
      const stores = await Promise.all([1, 2, 3].map(() => PostgresSessionStore.open(url, { poolSize: 2 })));
      try {
        expect(await stores[0]!.read('old')).toEqual(log.slice(0, 6));
        const appended = await stores[1]!.append('old', 6, log.slice(6));
        expect(appended.receipts.every((r) => r.chain !== null)).toBe(true);
        expect(await stores[2]!.read('old')).toEqual(log);
        const chain = await stores[2]!.readChain('old');
        expect(chain.anchor).toBeNull();
        expect(chain.links.map((l) => l.chain === null)).toEqual(log.map((e) => e.seq < 6));
        expect(verifyChain(chain)).toMatchObject({ ok: true, unchained: { from: 0, to: 5 }, broken: null });
      } finally {
        for (const store of stores) await store.close();
      }
    } finally {
      await drop();
    }
  });

  it('keeps one chain under concurrent appenders of one session on separate pools', async () => {
    const { url, drop } = await freshSchema();
    const stores = await Promise.all([1, 2, 3, 4].map(() => PostgresSessionStore.open(url, { poolSize: 2 })));
    try {
      const log = sampleLog('busy', 3);
      await stores[0]!.create('busy', { createdAt: T0 });
      // Every store appends every event, one per call, all at once: each slot is won once, and the losers
      // get the winner's chain digest back (their own events carry the same times here, so only a chain
      // computed from another row's snapshot could differ).
      const results = await Promise.all(
        stores.map(async (store) => {
          const chains: Array<string | null> = [];
          for (const event of log) chains.push((await store.append('busy', event.seq, [event])).receipts[0]!.chain);
          return chains;
        }),
      );
      const chain = await stores[0]!.readChain('busy');
      expect(verifyChain(chain)).toMatchObject({ ok: true, links: log.length });
      for (const chains of results) expect(chains).toEqual(chain.links.map((l) => l.chain));
    } finally {
      for (const store of stores) await store.close();
      await drop();
    }
  });
});
