// The agent catalog on both of its stores (a SQLite `.agents.db` shared by two handles, as two worker processes
// share it; PostgreSQL in a scratch schema): grouping by task queue, name and version with the workers serving
// each, removal, rows aging out after the TTL (a worker killed without closing), a worker's publisher refreshing
// and removing its rows, and a sharded store spec keeping the catalog on its first shard.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentCatalog, CatalogWorker, PublishedAgent } from '../../src/agents/agent-catalog.js';
import type { AgentDirectory, AgentEntry } from '../../src/agents/agent-directory.js';
import { openAgentCatalog } from '../../src/agents/open-agent-catalog.js';
import { publishAgents } from '../../src/agents/publish-agents.js';
import { agentCatalogPathFor } from '../../src/agents/sqlite-agent-catalog.js';
import type { ToolDefinition } from '../../src/plugins/contracts.js';
import { scratchSchema, type ScratchSchema } from '../helpers/scratch-schema.js';

/** A store spec of each kind, whose catalog every handle opened on it shares. */
const backends: Record<string, () => Promise<{ spec: string; drop(): Promise<void> }>> = {
  sqlite: () => {
    const dir = mkdtempSync(join(tmpdir(), 'dh-catalog-'));
    return Promise.resolve({
      spec: join(dir, 'sessions.db'),
      drop: () => Promise.resolve(rmSync(dir, { recursive: true, force: true })),
    });
  },
  postgres: async () => {
    const schema = await scratchSchema();
    return { spec: schema.url, drop: () => schema.drop() };
  },
};

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function storeSpec(kind: string): Promise<string> {
  const backend = await (backends[kind] as () => Promise<{ spec: string; drop(): Promise<void> }>)();
  cleanups.push(() => backend.drop());
  return backend.spec;
}

async function open(spec: string, ttlMs?: number): Promise<AgentCatalog> {
  const catalog = await openAgentCatalog(spec, ttlMs !== undefined ? { ttlMs } : {});
  cleanups.push(() => catalog.close());
  return catalog;
}

const worker = (instanceId: string, taskQueue = 'q-main'): CatalogWorker => ({
  taskQueue,
  hostId: 'host-a',
  pid: 4242,
  instanceId,
});
const agent = (name: string, version: string, extra: Partial<PublishedAgent> = {}): PublishedAgent => ({
  name,
  version,
  model: 'model-a',
  tools: ['read_file', 'shell'],
  isDefault: false,
  ...extra,
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

for (const kind of Object.keys(backends)) {
  describe(`agent catalog on ${kind}`, () => {
    it('lists each (task queue, name, version) once with the workers serving it; both versions of a rolling deploy', async () => {
      const spec = await storeSpec(kind);
      const [a, b] = [await open(spec), await open(spec)];
      const coder1 = agent('coder', '111111111111', { isDefault: true, description: 'writes code' });
      await a.publish(worker('w1'), [coder1, agent('reviewer', 'aaaaaaaaaaaa', { tools: [] })]);
      await b.publish(worker('w2'), [coder1]);
      await sleep(20); // seen later, by any clock's resolution
      // A new version of coder on a third worker, and another queue's agent.
      await a.publish(worker('w3'), [agent('coder', '222222222222', { model: 'model-b' })]);
      await b.publish(worker('w4', 'q-other'), [agent('coder', '111111111111')]);

      const listed = await b.list({ taskQueue: 'q-main' });
      expect(listed.map((l) => [l.name, l.version, l.workers, l.default, l.model])).toEqual([
        // The most recently seen version of a name first.
        ['coder', '222222222222', 1, false, 'model-b'],
        ['coder', '111111111111', 2, true, 'model-a'],
        ['reviewer', 'aaaaaaaaaaaa', 1, false, 'model-a'],
      ]);
      const first = listed[1];
      expect(first).toMatchObject({ taskQueue: 'q-main', description: 'writes code', tools: ['read_file', 'shell'] });
      expect(Math.abs((first?.lastSeenAt ?? 0) - Date.now())).toBeLessThan(5_000);
      expect(listed[2]?.description).toBeNull();
      // Without a queue: every queue's, by queue.
      expect((await a.list()).map((l) => `${l.taskQueue}/${l.name}@${l.version}`)).toEqual([
        'q-main/coder@222222222222',
        'q-main/coder@111111111111',
        'q-main/reviewer@aaaaaaaaaaaa',
        'q-other/coder@111111111111',
      ]);
      expect((await a.rows({ taskQueue: 'q-other' })).map((r) => [r.instanceId, r.hostId, r.pid])).toEqual([
        ['w4', 'host-a', 4242],
      ]);
    });

    it("replaces a worker's rows on each publish and removes them when it unpublishes", async () => {
      const spec = await storeSpec(kind);
      const catalog = await open(spec);
      await catalog.publish(worker('w1'), [agent('coder', '111111111111'), agent('reviewer', 'aaaaaaaaaaaa')]);
      await catalog.publish(worker('w1'), [agent('coder', '111111111111')]);
      expect((await catalog.list()).map((l) => l.name)).toEqual(['coder']);
      await catalog.publish(worker('w2'), [agent('coder', '111111111111')]);
      await catalog.unpublish('w1');
      expect((await catalog.list()).map((l) => [l.name, l.workers])).toEqual([['coder', 1]]);
      await catalog.unpublish('w2');
      expect(await catalog.list()).toEqual([]);
    });

    it('stops listing a worker that stopped refreshing once the TTL has passed (killed, never closed)', async () => {
      const spec = await storeSpec(kind);
      const catalog = await open(spec, 600);
      await catalog.publish(worker('killed'), [agent('coder', '111111111111')]);
      expect(await catalog.list()).toHaveLength(1);
      await sleep(900);
      expect(await catalog.list()).toEqual([]);
      // A live worker's publish is listed, and the stale rows are gone from the table too.
      await catalog.publish(worker('alive'), [agent('coder', '111111111111')]);
      const listed = await catalog.list();
      expect(listed.map((l) => l.workers)).toEqual([1]);
      const longer = await open(spec, 60_000);
      expect((await longer.rows()).map((r) => r.instanceId)).toEqual(['alive']);
    });

    it("a worker's publisher lists it at once, keeps it listed past the TTL, and removes it at stop", async () => {
      const spec = await storeSpec(kind);
      const reader = await open(spec, 600);
      const warnings: string[] = [];
      const publisher = await publishAgents({
        store: spec,
        taskQueue: 'q-pub',
        hostId: 'host-b',
        agents: directory(),
        log: { info: () => undefined, warn: (line) => warnings.push(line) },
        everyMs: 150,
        ttlMs: 600,
      });
      cleanups.push(() => publisher.stop());
      expect((await reader.list()).map((l) => [l.name, l.default, l.tools])).toEqual([
        ['coder', true, ['read_file']],
        ['helper', false, []],
      ]);
      await sleep(1_000);
      expect((await reader.list({ taskQueue: 'q-pub' })).map((l) => l.name)).toEqual(['coder', 'helper']);
      expect((await reader.rows())[0]).toMatchObject({ hostId: 'host-b', pid: process.pid });
      await publisher.stop();
      expect(await reader.list()).toEqual([]);
      expect(warnings).toEqual([]);
    });
  });
}

describe('agent catalog on a sharded store', () => {
  it('lives on the first shard', async () => {
    const shards: ScratchSchema[] = [await scratchSchema(), await scratchSchema()];
    cleanups.push(async () => {
      for (const shard of shards) await shard.drop();
    });
    const catalog = await open(shards.map((s) => s.url).join(' '));
    await catalog.publish(worker('w1'), [agent('coder', '111111111111')]);
    const count = async (shard: ScratchSchema) =>
      (await shard.admin.query<{ n: string }>(`SELECT count(*) AS n FROM ${shard.name}.dh_agents`)).rows[0]?.n;
    expect(await count(shards[0] as ScratchSchema)).toBe('1');
    await expect(count(shards[1] as ScratchSchema)).rejects.toThrow(/does not exist/);
  });
});

describe('the SQLite catalog file', () => {
  it('sits beside the store', () => {
    expect(agentCatalogPathFor('/home/u/.dh/sessions.db')).toBe('/home/u/.dh/sessions.agents.db');
    expect(agentCatalogPathFor('/data/store')).toBe('/data/store.agents.db');
  });
});

/** Two agents, `coder` the default, as a worker's registry presents them. */
function directory(): AgentDirectory {
  const tool = { schema: { name: 'read_file' } } as unknown as ToolDefinition;
  const agents: AgentEntry[] = [
    { name: 'coder', version: '111111111111', model: 'model-a', tools: new Map([['read_file', tool]]) },
    { name: 'helper', version: 'bbbbbbbbbbbb', model: 'model-a', tools: new Map() },
  ];
  return { defaultAgent: 'coder', get: (name) => agents.find((a) => a.name === name), list: () => agents };
}
