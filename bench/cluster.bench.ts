// Throughput on a production-shaped Temporal cluster (temporal-server on PostgreSQL, test/helpers/test-cluster.ts):
// model steps per second with 100 sessions on 1, 2 and 3 worker processes against bare workflows on as many bare
// worker processes, CPU per step by process, how steps spread over the workers; then unit costs for sizing.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { resolveTemporalServer } from '../src/local-stack/temporal-server-binaries.js';
import { writeSessionWorkflowBundle } from '../src/local-stack/workflow-bundle-cache.js';
import { startScriptedProvider } from '../src/scripted-provider/start-scripted-provider.js';
import { followupSignal, sessionWorkflowId } from '../src/shared/session-messages.js';
import { agentSession } from '../src/workflows/session-workflow.js';
import { startChildWorker } from '../test/helpers/child-worker.js';
import { SCENARIO_MODEL } from '../test/helpers/scenario-runtime.js';
import { databaseUrl, startTestCluster } from '../test/helpers/test-cluster.js';
import { startPostgres } from '../test/setup/postgres.js';
import { bareWorkflowBundle } from './bare/bare-worker.js';
import { tallyHistories, type HistoryTally } from './cluster-history.js';
import { cpuMs, postgresCpuMs, postmasterOf, startBareProcess } from './cluster-processes.js';
import { clusterSections, type ClusterRun, type StoreStatement, type UnitCosts } from './cluster-report.js';
import { PostgresCpuByDatabase } from './postgres-cpu-by-database.js';
import { SHARD_COUNTS, shardSection, type ShardRun } from './cluster-shards-report.js';
import { shardIndexOf } from '../src/core/shard-key.js';
import { turnReplies, vmRssBytes } from './harness.bench.js';
import type { BenchSection } from './measure.js';

interface Proc {
  readonly pid: number;
  stop(): Promise<unknown>;
}

/** Worker processes of one kind, grown (host-1, host-2, ...) or shrunk (the last started first) to a count. */
function fleet(start: (index: number) => Promise<Proc>) {
  const procs: Proc[] = [];
  return {
    procs,
    /** Whether the set changed. */
    resize: async (n: number): Promise<boolean> => {
      const changed = procs.length !== n;
      while (procs.length > n) await procs.pop()?.stop();
      // Started one at a time: two starts at once on 2 cores only make both slower.
      while (procs.length < n) procs.push(await start(procs.length + 1));
      return changed;
    },
  };
}

/** The role the bench's own store polling connects as (left out of dh's store figures). */
const POLLER = 'dh_bench_poller';

/** The workflow cache of the evicted-sessions worker: far fewer than the sessions it serves. */
const EVICTING_CACHE = 10;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function clusterBench(
  sessions = Number(process.env.DH_BENCH_CLUSTER_SESSIONS ?? 100),
  maxWorkers = Number(process.env.DH_BENCH_CLUSTER_WORKERS ?? 3),
  rounds = Number(process.env.DH_BENCH_CLUSTER_ROUNDS ?? 3),
  toolSteps = 4,
): Promise<BenchSection[]> {
  const wallBegin = performance.now();
  const steps = toolSteps + 1;
  const warmSessions = Math.max(1, Math.round(sessions / 5));
  const counts = Array.from({ length: maxWorkers }, (_, i) => i + 1);
  const dir = mkdtempSync(join(tmpdir(), 'dh-bench-cluster-'));
  // Every session's replies, in the order the sessions start (a used reply is skipped cheaply).
  const labels: string[] = [];
  for (let w = 0; w < 2 * rounds * maxWorkers + 1; w++) labels.push(...sessionIds(`warm${w}`, warmSessions));
  for (let r = 0; r < rounds; r++) for (const n of counts) labels.push(...sessionIds(`r${r}w${n}`, sessions));
  for (let r = 0; r < rounds; r++) for (const n of SHARD_COUNTS) labels.push(...sessionIds(`sh${r}x${n}`, sessions));
  labels.push(...sessionIds('shwarm', warmSessions));
  labels.push(...['rss1', 'rss2', 'evicted1', 'evicted2'].flatMap((label) => sessionIds(label, sessions)));
  const replies = labels.flatMap((id) => turnReplies(`task ${id}:`, toolSteps));

  const [postgres, binaries, bundle, bareCode, provider] = await Promise.all([
    // pg_stat_statements: what dh's store asks PostgreSQL, per statement (the "dh store statements" table).
    startPostgres({ settings: ['shared_preload_libraries=pg_stat_statements'] }),
    resolveTemporalServer(),
    writeSessionWorkflowBundle(join(dir, 'workflow-bundle.js'), {
      cache: process.env.DH_WORKFLOW_BUNDLE_CACHE !== 'off',
    }),
    bareWorkflowBundle(),
    startScriptedProvider({ script: { models: [SCENARIO_MODEL], mode: 'match', cache: 'off', replies } }),
  ]);
  const bareBundlePath = join(dir, 'bare-bundle.js');
  writeFileSync(bareBundlePath, bareCode);
  const test = await startTestCluster(binaries, postgres.url, 'bench');
  const { address, namespace } = test.cluster;
  const temporalDb = test.cluster.env.TEMPORAL_DB ?? '';
  const visibilityDb = test.cluster.env.TEMPORAL_VISIBILITY_DB ?? '';
  const storeDb = new URL(test.storeUrl).pathname.slice(1);
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  const admin = new pg.Pool({ connectionString: postgres.url, max: 1 });
  // The bench polls the store as a role of its own, so neither dh's statements nor its CPU include the polling.
  await admin.query(`CREATE ROLE ${POLLER} LOGIN SUPERUSER`);
  const pollerUrl = new URL(test.storeUrl);
  pollerUrl.username = POLLER;
  const store = new pg.Pool({ connectionString: pollerUrl.toString(), max: 2 });
  const taskQueue = 'dh-cluster-bench';
  const bareQueue = 'bare-cluster-bench';
  const workerConfig = (hostId: string, queue: string) => ({
    address,
    namespace,
    taskQueue: queue,
    workflowBundlePath: bundle.codePath,
    storePath: join(dir, 'unused.db'),
    storeUrl: test.storeUrl,
    providerBaseURL: provider.url,
    runLog: join(dir, 'run.log'),
    idleTimeoutMs: 60_000,
    hostId,
  });
  const ours = fleet((i) => startChildWorker(workerConfig(`host-${i}`, taskQueue)));
  const bare = fleet(() => startBareProcess({ address, namespace, taskQueue: bareQueue, bundlePath: bareBundlePath }));

  try {
    await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    let statements: StoreStatement[] = [];
    const backend = await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const postmaster = postmasterOf(backend.rows[0]?.pid ?? -1);
    const dbSize = async (name: string) =>
      Number((await admin.query<{ size: string }>('SELECT pg_database_size($1) AS size', [name])).rows[0]?.size);

    /**
     * Starts one turn in each session; resolves with the wall span from the first start to the last `turn/end`,
     * polling the store's database (every shard's, for a sharded store).
     */
    const runSessions = async (ids: readonly string[], queue: string, pollers = [store]): Promise<number> => {
      const begin = Date.now();
      await Promise.all(
        ids.map((id) =>
          client.workflow.signalWithStart(agentSession, {
            workflowId: sessionWorkflowId(id),
            taskQueue: queue,
            args: [{ sessionId: id }],
            signal: followupSignal,
            signalArgs: [{ content: `task ${id}: go`, messageId: `m-${id}` }],
          }),
        ),
      );
      // The store is in the worker processes: poll it; the end is the last `turn/end`'s own time (`at`).
      for (const deadline = Date.now() + 300_000; Date.now() < deadline; await sleep(50)) {
        const polled = await Promise.all(
          pollers.map(async (pool) => {
            const { rows } = await pool.query<{ n: number; last: string | null }>(
              `SELECT count(*)::int AS n, max(at)::text AS last FROM events
               WHERE type = 'turn/end' AND session_id = ANY($1)`,
              [ids],
            );
            return { n: rows[0]?.n ?? 0, last: rows[0]?.last != null ? Number(rows[0].last) : 0 };
          }),
        );
        const ended = polled.reduce((sum, p) => sum + p.n, 0);
        if (ended >= ids.length) return Math.max(...polled.map((p) => p.last)) - begin;
      }
      throw new Error(`${ids.length} sessions did not all end their turn within 300 s`);
    };
    const runBare = async (ids: readonly string[]): Promise<number> => {
      const begin = Date.now();
      await Promise.all(
        ids.map((id) =>
          client.workflow.execute('bareSession', { workflowId: id, taskQueue: bareQueue, args: [steps] }),
        ),
      );
      return Date.now() - begin;
    };

    let warmups = 0;
    const warmUp = async (kind: 'ours' | 'bare') => {
      const ids = sessionIds(`warm${warmups++}`, warmSessions);
      if (kind === 'ours') await runSessions(ids, taskQueue);
      else await runBare(ids.map((id) => `bare-${id}`));
    };

    const measure = async (kind: 'ours' | 'bare', label: string, n: number): Promise<ClusterRun> => {
      const procs = (kind === 'ours' ? ours : bare).procs;
      const ids = sessionIds(label, sessions).map((id) => (kind === 'ours' ? id : `bare-${id}`));
      const serverPid = test.cluster.pid() ?? -1;
      const before = {
        server: cpuMs(serverPid),
        workers: procs.map((p) => cpuMs(p.pid)),
        postgres: postmaster !== null ? postgresCpuMs(postmaster) : Number.NaN,
        bench: process.cpuUsage(),
        temporal: await dbSize(temporalDb),
        visibility: await dbSize(visibilityDb),
        at: performance.now(),
      };
      // The first run of ours on one worker also counts the store's statements.
      const countStatements = kind === 'ours' && n === 1 && statements.length === 0;
      if (countStatements) await admin.query('SELECT pg_stat_statements_reset()');
      const byDatabase = new PostgresCpuByDatabase(admin, POLLER);
      await byDatabase.start();
      const spanMs = kind === 'ours' ? await runSessions(ids, taskQueue) : await runBare(ids);
      const wallMs = performance.now() - before.at;
      const databases = await byDatabase.stop();
      if (countStatements) statements = await storeStatements(admin, storeDb);
      const bench = process.cpuUsage(before.bench);
      const total = sessions * steps;
      const cpu = {
        server: (cpuMs(serverPid) - before.server) / total,
        perWorker: procs.map((p, i) => (cpuMs(p.pid) - (before.workers[i] ?? 0)) / total),
        postgres: (postmaster !== null ? postgresCpuMs(postmaster) - before.postgres : Number.NaN) / total,
        postgresByDatabase: {
          store: (databases.get(storeDb) ?? 0) / total,
          temporal: (databases.get(temporalDb) ?? 0) / total,
          visibility: (databases.get(visibilityDb) ?? 0) / total,
        },
        bench: (bench.user + bench.system) / 1000 / total,
      };
      const temporalBytes = (await dbSize(temporalDb)) - before.temporal;
      const visibilityBytes = (await dbSize(visibilityDb)) - before.visibility;
      // Outside the timed span: who ran the steps, and the histories' size.
      const workflowIds = kind === 'ours' ? ids.map((id) => sessionWorkflowId(id)) : ids;
      const tally = await tallyHistories(client, workflowIds, kind === 'ours' ? 'modelStep' : 'bareModel');
      const cpuSum = cpu.server + cpu.perWorker.reduce((a, b) => a + b, 0) + cpu.postgres + cpu.bench;
      return {
        kind,
        workers: n,
        stepsPerSecond: total / (spanMs / 1000),
        cpu,
        busyCores: (cpuSum * total) / wallMs,
        stepShares: shares(tally.steps, procs),
        taskShares: shares(tally.workflowTasks, procs),
        historyBytesPerStep: tally.bytes / total,
        temporalBytesPerStep: temporalBytes / total,
        visibilityBytesPerSession: visibilityBytes / sessions,
      };
    };

    const runs: ClusterRun[] = [];
    for (let r = 0; r < rounds; r++) {
      // Growing, then shrinking, then growing the fleets: each count is met after more and after fewer workers.
      for (const n of r % 2 === 0 ? counts : [...counts].reverse()) {
        for (const kind of ['ours', 'bare'] as const) {
          // A changed fleet runs a short warm-up first (a fresh process's JIT and connections), not counted.
          if (await (kind === 'ours' ? ours : bare).resize(n)) await warmUp(kind);
          const run = await measure(kind, `r${r}w${n}`, n);
          console.log(
            `  round ${r + 1}: ${kind} × ${n}: ${run.stepsPerSecond.toFixed(1)} steps/s, ` +
              `steps by process ${run.stepShares.map((s) => `${Math.round(s * 100)}%`).join('/')}`,
          );
          runs.push(run);
        }
      }
    }
    await bare.resize(0);

    // The shard axis: the same fleet of processes on the one store database, then on 3 shard databases (on this
    // one PostgreSQL server, so they share its cores: what matters is CPU per step, per shard, and that nothing
    // serializes across shards).
    const shardQueue = `${taskQueue}-sharded`;
    const shardDbs = Array.from({ length: Math.max(...SHARD_COUNTS) }, (_, i) => `${storeDb}_shard${i}`);
    for (const db of shardDbs) await admin.query(`CREATE DATABASE ${db}`);
    const shardUrls = shardDbs.map((db) => databaseUrl(test.storeUrl, db));
    const shardPollers = shardUrls.map((url) => {
      const poller = new URL(url);
      poller.username = POLLER;
      return new pg.Pool({ connectionString: poller.toString(), max: 1 });
    });
    const sharded = fleet((i) =>
      startChildWorker({ ...workerConfig(`host-s${i}`, shardQueue), storeUrl: shardUrls.join(' ') }),
    );
    const shardRuns: ShardRun[] = [];
    try {
      await ours.resize(maxWorkers);
      await sharded.resize(maxWorkers);
      await runSessions(sessionIds('shwarm', warmSessions), shardQueue, shardPollers);
      for (let r = 0; r < rounds; r++) {
        for (const shards of r % 2 === 0 ? SHARD_COUNTS : [...SHARD_COUNTS].reverse()) {
          const ids = sessionIds(`sh${r}x${shards}`, sessions);
          const dbs = shards === 1 ? [storeDb] : shardDbs;
          const byDatabase = new PostgresCpuByDatabase(admin, POLLER);
          await byDatabase.start();
          const spanMs =
            shards === 1 ? await runSessions(ids, taskQueue) : await runSessions(ids, shardQueue, shardPollers);
          const databases = await byDatabase.stop();
          const total = sessions * steps;
          const perShard = dbs.map((db) => (databases.get(db) ?? 0) / total);
          const perShardSessions =
            shards === 1 ? [sessions] : dbs.map((_, i) => ids.filter((id) => shardIndexOf(id, shards) === i).length);
          shardRuns.push({
            shards,
            stepsPerSecond: total / (spanMs / 1000),
            storeCpuPerStep: perShard.reduce((a, b) => a + b, 0),
            perShardCpuPerStep: perShard,
            perShardSessions,
            temporalCpuPerStep: (databases.get(temporalDb) ?? 0) / total,
            storeBackends: dbs.map((db) => byDatabase.born().get(db) ?? 0).reduce((a, b) => a + b, 0),
            storeConnections: await storeConnections(admin, dbs),
          });
          console.log(`  round ${r + 1}: ${shards} shard(s): ${(total / (spanMs / 1000)).toFixed(1)} steps/s`);
        }
      }
    } finally {
      await sharded.resize(0);
      for (const pool of shardPollers) await pool.end();
    }
    await ours.resize(0);

    // RSS per session: a fresh worker on a queue of its own, idle, then with 100 and 200 sessions; once with the
    // SDK's workflow cache (every session stays cached), once capped at EVICTING_CACHE (all but a few evicted).
    const rssOf = async (label: string, maxCachedWorkflows?: number): Promise<UnitCosts['rss']> => {
      const queue = `${taskQueue}-${label}`;
      const worker = await startChildWorker({
        ...workerConfig(`host-${label}`, queue),
        ...(maxCachedWorkflows !== undefined ? { maxCachedWorkflows } : {}),
      });
      try {
        await sleep(3_000);
        const idle = vmRssBytes(worker.pid);
        await runSessions(sessionIds(`${label}1`, sessions), queue);
        await sleep(2_000);
        const first = vmRssBytes(worker.pid);
        await runSessions(sessionIds(`${label}2`, sessions), queue);
        await sleep(2_000);
        return { idle, first, second: vmRssBytes(worker.pid), sessions };
      } finally {
        await worker.stop();
      }
    };
    const rss = await rssOf('rss');
    const rssEvicted = await rssOf('evicted', EVICTING_CACHE);

    const storeRow = (
      await store.query<{ events: string; sessions: string; events_bytes: string; sessions_bytes: string }>(
        `SELECT (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM sessions) AS sessions,
                pg_total_relation_size('events') AS events_bytes, pg_total_relation_size('sessions') AS sessions_bytes`,
      )
    ).rows[0];
    const units: UnitCosts = {
      storeEvents: Number(storeRow?.events),
      storeSessions: Number(storeRow?.sessions),
      eventsBytes: Number(storeRow?.events_bytes),
      sessionsBytes: Number(storeRow?.sessions_bytes),
      rss,
      rssEvicted,
      evictingCache: EVICTING_CACHE,
    };
    const sections = clusterSections({
      runs,
      units,
      statements,
      sessions,
      steps,
      rounds,
      warmSessions,
      wallSeconds: (performance.now() - wallBegin) / 1000,
    });
    return [...sections, shardSection(shardRuns, { sessions, steps, rounds, workers: maxWorkers })];
  } finally {
    await ours.resize(0).catch(() => undefined);
    await bare.resize(0).catch(() => undefined);
    await store.end();
    await admin.end();
    await connection.close();
    await test.dispose();
    await provider.close();
    await postgres.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Client backends connected to `databases` now (the pools the workers keep open). */
async function storeConnections(admin: pg.Pool, databases: readonly string[]): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = ANY($1)
       AND usename <> $2`,
    [databases, POLLER],
  );
  return rows[0]?.n ?? 0;
}

/** The store database's statements since the last reset, by total execution time (pg_stat_statements). */
async function storeStatements(admin: pg.Pool, database: string): Promise<StoreStatement[]> {
  const { rows } = await admin.query<{ query: string; calls: string; total: number; rows: string }>(
    `SELECT s.query, s.calls::text AS calls, s.total_exec_time AS total, s.rows::text AS rows
     FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid JOIN pg_roles r ON r.oid = s.userid
     WHERE d.datname = $1 AND r.rolname <> $2 ORDER BY s.total_exec_time DESC`,
    [database, POLLER],
  );
  return rows.map((r) => ({ query: r.query, calls: Number(r.calls), totalMs: r.total, rows: Number(r.rows) }));
}

function sessionIds(label: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${label}s${i}`);
}

/** Each process's share of the tallied count, in start order (identities are `pid@host`). */
function shares(byIdentity: HistoryTally['steps'], procs: readonly Proc[]): number[] {
  const total = [...byIdentity.values()].reduce((a, b) => a + b, 0) || 1;
  const count = (pid: number) =>
    [...byIdentity].filter(([identity]) => identity.startsWith(`${pid}@`)).reduce((sum, [, n]) => sum + n, 0);
  return procs.map((p) => count(p.pid) / total);
}
