// The operator commands on a sharded store (DH_STORE: two PostgreSQL databases): `dh ls` pages a listing with
// the cursor it prints (every session once, in order, across both shards; a bad cursor is a usage error), a
// list in another order is refused, and `dh export` / `dh import` move a log from one shard to the other.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { verifyChain } from '../../src/stores/log-chain.js';
import { ShardedSessionStore } from '../../src/stores/sharded-session-store.js';
import { join } from 'node:path';
import { T0 } from '../helpers/event-builders.js';
import { LogDriver } from '../helpers/log-generator.js';
import { databaseUrl } from '../helpers/test-cluster.js';
import { cleanEnv, describeRun, runDh, tempHome } from './operator-cli.js';

const baseUrl = inject('postgresUrl');
const names = [0, 1].map((i) => `dh_ls_${randomUUID().replaceAll('-', '').slice(0, 10)}_${i}`);
const urls = names.map((name) => databaseUrl(baseUrl, name));

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl(baseUrl, 'postgres') });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

describe('dh on a sharded store', () => {
  const home = tempHome('dh-ls-');
  const env = cleanEnv({ DH_HOME: home.home, DH_STORE: urls.join(' ') });
  const ids = Array.from({ length: 11 }, (_, i) => `listed-${String(i).padStart(2, '0')}`);

  beforeAll(async () => {
    for (const name of names) await admin(`CREATE DATABASE ${name}`);
    const store = await ShardedSessionStore.open(urls);
    try {
      for (const [i, id] of ids.entries()) await store.create(id, { createdAt: T0 + Math.floor(i / 2) });
      expect(new Set(ids.map((id) => store.shardOf(id))).size).toBe(2);
    } finally {
      await store.close();
    }
  });
  afterAll(async () => {
    for (const name of names) await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    home.cleanup();
  });

  it('follows the printed cursor to the end: every session once, newest first', async () => {
    const seen: string[] = [];
    let args = ['ls', '--limit', '4'];
    for (let page = 0; page < 5; page++) {
      const result = await runDh(args, env);
      expect(result.code, describeRun(result)).toBe(0);
      seen.push(...[...result.stdout.matchAll(/^(listed-\d\d)\s/gm)].map((m) => m[1] ?? ''));
      const more = /^more: dh (ls .*)$/m.exec(result.stdout)?.[1];
      if (more === undefined) break;
      args = more.split(' ');
    }
    expect(seen).toEqual([...ids].reverse());
  }, 120_000);

  it('refuses a store list in another order, naming the misplaced shard', async () => {
    const swapped = cleanEnv({ DH_HOME: home.home, DH_STORE: [...urls].reverse().join(',') });
    const result = await runDh(['ls'], swapped);
    expect(result.code, describeRun(result)).not.toBe(0);
    expect(result.stderr).toMatch(/STORE_SHARD_MAP_MISMATCH|do not match this worker's list/);
    expect(result.stderr).toMatch(/shard 0 \(.*_1\): it is stored as shard 1, not 0/);
  });

  it('exports a log from one shard and imports it onto the other with its chain', async () => {
    const store = await ShardedSessionStore.open(urls);
    const source = Array.from({ length: 50 }, (_, i) => `tree-${i}`).find((id) => store.shardOf(id) === 0) ?? '';
    const copy = Array.from({ length: 50 }, (_, i) => `copy-${i}`).find((id) => store.shardOf(id) === 1) ?? '';
    const log = new LogDriver(source).run([
      { kind: 'send', origin: 'followup', text: 'one' },
      { kind: 'step', toolCalls: 1, text: 'a', changeHeader: false, skipLastTool: false },
      { kind: 'end-turn' },
    ]).session.events;
    try {
      await store.create(source, { createdAt: T0 + 100 });
      await store.append(source, 0, log);
    } finally {
      await store.close();
    }
    const file = join(home.home, 'source.jsonl');
    const exported = await runDh(['export', source, '--out', file], env);
    expect(exported.code, describeRun(exported)).toBe(0);
    const imported = await runDh(['import', file, '--as', copy], env);
    expect(imported.code, describeRun(imported)).toBe(0);
    const reopened = await ShardedSessionStore.open(urls);
    try {
      expect((await reopened.read(copy)).map((e) => e.type)).toEqual(log.map((e) => e.type));
      // The copy's rows carry the source's chain (import verified it, the store re-linked nothing).
      expect(verifyChain(await reopened.readChain(copy))).toMatchObject({ ok: true, links: log.length });
    } finally {
      await reopened.close();
    }
  }, 120_000);

  it('refuses a cursor that is not one', async () => {
    const result = await runDh(['ls', '--after', 'yesterday'], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--after "yesterday" is not a listing cursor \(<createdAt>\.<sessionId>/);
  });
});
