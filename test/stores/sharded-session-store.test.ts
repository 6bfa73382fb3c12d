// The sharded store: the SessionStore conformance suite on 3 shards (3 databases of the test PostgreSQL), the
// shard map refusing a worker whose list differs, and 2 separate PostgreSQL clusters as shards, one of them
// SIGKILLed and restarted while sessions on both are written.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DhError } from '../../src/core/errors.js';
import { shardIndexOf } from '../../src/core/shard-key.js';
import { childSessionIdFor } from '../../src/core/delegation.js';
import { forkEvents, Session } from '../../src/core/index.js';
import { createSessionFromLog, forkAnchor } from '../../src/operations/session-transfer.js';
import { openSessionStore } from '../../src/stores/open-session-store.js';
import { STORE_SHARD_MAP_MISMATCH } from '../../src/stores/postgres-shard-map.js';
import { ShardedSessionStore } from '../../src/stores/sharded-session-store.js';
import { PostgresSessionStore } from '../../src/stores/postgres-session-store.js';
import { verifyChain } from '../../src/stores/log-chain.js';
import { openDeltaChannel } from '../../src/streaming/open-delta-channel.js';
import { T0, sampleLog } from '../helpers/event-builders.js';
import { LogDriver } from '../helpers/log-generator.js';
import { databaseUrl } from '../helpers/test-cluster.js';
import { startPostgres, type TestPostgres } from '../setup/postgres.js';
import { describeSessionStoreConformance, type StoreBackend } from './session-store-conformance.js';

const baseUrl = inject('postgresUrl');

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** `count` new databases on the server of `serverUrl`, and a function that drops them. */
async function freshDatabases(serverUrl: string, count: number) {
  const tag = randomUUID().replaceAll('-', '').slice(0, 12);
  const names = Array.from({ length: count }, (_, i) => `dh_shard_${tag}_${i}`);
  for (const name of names) await adminQuery(databaseUrl(serverUrl, 'postgres'), `CREATE DATABASE ${name}`);
  return {
    urls: names.map((name) => databaseUrl(serverUrl, name)),
    drop: async () => {
      for (const name of names) {
        await adminQuery(databaseUrl(serverUrl, 'postgres'), `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      }
    },
  };
}

/** An admin connection to each shard, to reach behind the store as the suite needs. */
async function onShardOf(urls: readonly string[], sessionId: string, sql: string, values: unknown[]) {
  const client = new pg.Client({ connectionString: urls[shardIndexOf(sessionId, urls.length)] });
  await client.connect();
  try {
    return await client.query(sql, values);
  } finally {
    await client.end();
  }
}

/** The suite's backend for a sharded store over `urls`, reaching behind it on each session's own shard. */
function shardedBackend(urls: readonly string[], dispose: () => Promise<void>): StoreBackend {
  return {
    spec: urls.join(' '),
    open: (extra = {}) => ShardedSessionStore.open(urls, { poolSize: 2, ...extra }),
    corruptBody: async (sessionId, seq, body) => {
      const sql = 'UPDATE events SET body = $3 WHERE session_id = $1 AND seq = $2';
      expect((await onShardOf(urls, sessionId, sql, [sessionId, seq, body])).rowCount).toBe(1);
    },
    deleteRow: async (sessionId, seq) => {
      const sql = 'DELETE FROM events WHERE session_id = $1 AND seq = $2';
      expect((await onShardOf(urls, sessionId, sql, [sessionId, seq])).rowCount).toBe(1);
    },
    clearChain: async (sessionId) => {
      await onShardOf(urls, sessionId, 'UPDATE events SET chain = NULL, mac = NULL WHERE session_id = $1', [sessionId]);
      await onShardOf(urls, sessionId, 'UPDATE sessions SET chain_anchor = NULL WHERE session_id = $1', [sessionId]);
    },
    dispose,
  };
}

describeSessionStoreConformance('ShardedSessionStore (3 databases)', async () => {
  const { urls, drop } = await freshDatabases(baseUrl, 3);
  return shardedBackend(urls, drop);
});

/** One second PostgreSQL server for this file, started on first use (the last test kills and restarts it). */
let secondServer: Promise<TestPostgres> | undefined;
const secondPostgres = () => (secondServer ??= startPostgres({ own: true }));
afterAll(async () => {
  await (await secondServer)?.stop();
}, 60_000);

describeSessionStoreConformance('ShardedSessionStore (2 PostgreSQL servers)', async () => {
  const one = await freshDatabases(baseUrl, 1);
  const two = await freshDatabases((await secondPostgres()).url, 1);
  return shardedBackend([...one.urls, ...two.urls], async () => {
    await one.drop();
    await two.drop();
  });
});

/** The STORE_SHARD_MAP_MISMATCH error `open` fails with. */
async function mismatchOf(open: Promise<unknown>): Promise<DhError> {
  const error = await open.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DhError);
  expect((error as DhError).code).toBe(STORE_SHARD_MAP_MISMATCH);
  return error as DhError;
}

describe('ShardedSessionStore shard map', () => {
  it('opens from a list spec, places a subagent tree on its root shard, and spreads sessions', async () => {
    const { urls, drop } = await freshDatabases(baseUrl, 3);
    const store = await openSessionStore(urls.join(',\n'));
    try {
      expect(store).toBeInstanceOf(ShardedSessionStore);
      const sharded = store as ShardedSessionStore;
      const child = childSessionIdFor('root-1', 1, 1, 0);
      const grandchild = childSessionIdFor(child, 2, 1, 0);
      for (const id of ['root-1', child, grandchild]) {
        await store.create(id, { createdAt: T0 });
        await store.append(id, 0, sampleLog(id, 1));
      }
      expect(new Set(['root-1', child, grandchild].map((id) => sharded.shardOf(id))).size).toBe(1);
      // Each shard is a plain store of its own: the tree's three logs are all in the one database.
      const own = await PostgresSessionStore.open(urls[sharded.shardOf('root-1')] ?? '');
      try {
        expect((await own.list()).map((s) => s.sessionId).sort()).toEqual(['root-1', child, grandchild].sort());
      } finally {
        await own.close();
      }
      for (let i = 0; i < 30; i++) await store.create(`spread-${i}`, { createdAt: T0 + i });
      const used = new Set(Array.from({ length: 30 }, (_, i) => sharded.shardOf(`spread-${i}`)));
      expect(used.size).toBe(3);
    } finally {
      await store.close();
      await drop();
    }
  });

  it('refuses a worker whose list differs (order, count, a foreign or unsharded database), naming each difference', async () => {
    const { urls, drop } = await freshDatabases(baseUrl, 4);
    const [a, b, c, d] = urls as [string, string, string, string];
    const first = await ShardedSessionStore.open([a, b, c]);
    await first.create('kept', { createdAt: T0 });
    await first.close();
    try {
      // The same list again opens: the map is checked, not rewritten.
      const again = await ShardedSessionStore.open([a, b, c]);
      expect(await again.head('kept')).toBe(0);
      await again.close();

      const swapped = await mismatchOf(ShardedSessionStore.open([a, c, b]));
      expect(swapped.message).toMatch(/shard 1 \(.*_2\): it is stored as shard 2, not 1/);
      expect(swapped.message).toMatch(/shard 2 \(.*_1\): it is stored as shard 1, not 2/);
      expect(swapped.message).toMatch(/lists, in order: .*_0.*_1.*_2/);

      const fewer = await mismatchOf(ShardedSessionStore.open([a, b]));
      expect(fewer.message).toMatch(/its map has 3 shards, this worker lists 2/);

      // A fourth database is not claimed when shard 0 already says the map has three: nothing written there.
      const more = await mismatchOf(ShardedSessionStore.open([a, b, c, d]));
      expect(more.message).toMatch(/its map has 3 shards, this worker lists 4/);
      const other = await ShardedSessionStore.open([d]);
      await other.close();
      const foreign = await mismatchOf(ShardedSessionStore.open([a, d, c]));
      expect(foreign.message).toMatch(/shard 1 .*: it belongs to another sharded store/);

      // An unsharded store that holds sessions is never taken in as a shard.
      const { urls: plainUrls, drop: dropPlain } = await freshDatabases(baseUrl, 2);
      try {
        const plain = await PostgresSessionStore.open(plainUrls[1] ?? '');
        await plain.create('lonely', { createdAt: T0 });
        await plain.close();
        const refused = await mismatchOf(ShardedSessionStore.open(plainUrls));
        expect(refused.message).toMatch(/shard 1 .* holds 1 sessions but no shard map/);
      } finally {
        await dropPlain();
      }
    } finally {
      await drop();
    }
  });
});

describe('ShardedSessionStore on two PostgreSQL clusters', () => {
  let second: TestPostgres;
  beforeAll(async () => {
    second = await secondPostgres();
  }, 120_000);

  it('forks across clusters, lists and pages across them, and rides out one cluster SIGKILLed and restarted', async () => {
    const one = await freshDatabases(baseUrl, 1);
    const two = await freshDatabases(second.url, 1);
    const urls = [...one.urls, ...two.urls];
    const store = await ShardedSessionStore.open(urls, { poolSize: 2 });
    const channel = openDeltaChannel(urls.join(' '));
    try {
      // A session on each cluster.
      const ids = Array.from({ length: 40 }, (_, i) => `s-${i}`);
      const onTwo = ids.filter((id) => store.shardOf(id) === 1);
      const onOne = ids.filter((id) => store.shardOf(id) === 0);
      expect(onOne.length).toBeGreaterThan(0);
      expect(onTwo.length).toBeGreaterThan(0);
      for (const [i, id] of ids.entries()) {
        await store.create(id, { createdAt: T0 + i });
        await store.append(id, 0, sampleLog(id, 2));
      }

      const forkId = Array.from({ length: 100 }, (_, i) => `fork-${i}`).find((id) => store.shardOf(id) === 1) ?? '';
      // A parent with a finished turn (a structurally whole log) on the first cluster; its fork on the second.
      const forkParent = Array.from({ length: 100 }, (_, i) => `tree-${i}`).find((id) => store.shardOf(id) === 0) ?? '';
      const driven = new LogDriver(forkParent).run([
        { kind: 'send', origin: 'followup', text: 'one' },
        { kind: 'step', toolCalls: 1, text: 'a', changeHeader: false, skipLastTool: false },
        { kind: 'end-turn' },
      ]).session.events;
      await store.create(forkParent, { createdAt: T0 });
      await store.append(forkParent, 0, driven);
      const seed = driven.length;
      const events = forkEvents(new Session(forkParent, await store.read(forkParent)), {
        sessionId: forkId,
        atSeq: seed,
        at: T0 + 99,
      });
      const chainAnchor = await forkAnchor(store, forkParent, seed);
      expect(chainAnchor).toBe((await store.readChain(forkParent, seed - 1, seed)).links[0]?.chain);
      await createSessionFromLog(store, forkId, events, chainAnchor !== undefined ? { chainAnchor } : {});
      expect(await store.read(forkId)).toEqual(events);
      expect(verifyChain(await store.readChain(forkId))).toMatchObject({ ok: true, links: events.length });
      expect((await store.readChain(forkId)).anchor).toBe(chainAnchor);

      // The listing merges both clusters, newest first, and pages without loss.
      const all = (await store.list()).map((s) => s.sessionId);
      expect(all.slice(0, 3)).toEqual([forkId, 's-39', 's-38']);
      expect(all).toHaveLength(ids.length + 2);
      const paged: string[] = [];
      let after: { createdAt: number; sessionId: string } | undefined;
      for (;;) {
        const page = await store.list({ limit: 7, ...(after ? { after } : {}) });
        paged.push(...page.map((s) => s.sessionId));
        const last = page.at(-1);
        if (page.length < 7 || !last) break;
        after = { createdAt: last.createdAt, sessionId: last.sessionId };
      }
      expect(paged).toEqual(all);

      // Live deltas go to each session's own shard.
      channel.publish({
        sessionId: onTwo[0] ?? '',
        turn: 1,
        step: 1,
        attempt: 1,
        kind: 'text',
        text: 'hi',
        at: Date.now(),
      });
      await channel.flush();
      expect((await channel.read(onTwo[0] ?? '', 0)).map((d) => d.text)).toEqual(['hi']);
      const onSecond = await onShardOf(urls, onTwo[0] ?? '', 'SELECT count(*)::int AS n FROM dh_live_deltas', []);
      expect(onSecond.rows[0]).toEqual({ n: 1 });

      // The second cluster dies: sessions on the first go on; those on the second fail until it is back.
      await second.kill?.();
      const survivor = onOne[1] ?? '';
      const head = await store.head(survivor);
      await store.append(survivor, head, sampleLog(survivor, 3).slice(head));
      await expect(store.head(onTwo[0] ?? '')).rejects.toThrow();
      await second.restart?.();
      // Back: every session on the second cluster is whole, and takes appends again.
      for (const id of onTwo) expect(await store.read(id)).toEqual(sampleLog(id, 2));
      const victim = onTwo[0] ?? '';
      await store.append(victim, await store.head(victim), sampleLog(victim, 3).slice(await store.head(victim)));
      expect(await store.read(victim)).toEqual(sampleLog(victim, 3));
      expect(await store.read(survivor)).toEqual(sampleLog(survivor, 3));
    } finally {
      await channel.close();
      await store.close();
      await one.drop();
      await two.drop();
    }
  }, 180_000);
});
