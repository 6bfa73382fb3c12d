// The cluster bench's sections: the figures of its runs (cluster.bench.ts) as medians per kind and worker
// count, rendered as the throughput, CPU and spread tables and the unit costs for sizing.
import { fmt, median, type BenchSection } from './measure.js';

export interface ClusterRun {
  readonly kind: 'ours' | 'bare';
  /** Worker processes serving the run. */
  readonly workers: number;
  readonly stepsPerSecond: number;
  /**
   * CPU ms per step: the Temporal server, each worker process (start order), PostgreSQL, the bench process;
   * and of PostgreSQL, what its client backends spent by database (sampled: see postgres-cpu-by-database.ts).
   */
  readonly cpu: {
    server: number;
    perWorker: number[];
    postgres: number;
    postgresByDatabase: { store: number; temporal: number; visibility: number };
    bench: number;
  };
  /** All those processes' CPU time over the run's wall time. */
  readonly busyCores: number;
  /** Each worker process's share of the model-step activities (bare: `bareModel`), start order. */
  readonly stepShares: number[];
  /** Each worker process's share of the workflow tasks. */
  readonly taskShares: number[];
  readonly historyBytesPerStep: number;
  /** Growth of pg_database_size of the Temporal persistence database over the run, per step. */
  readonly temporalBytesPerStep: number;
  readonly visibilityBytesPerSession: number;
}

export interface UnitCosts {
  readonly storeEvents: number;
  readonly storeSessions: number;
  readonly eventsBytes: number;
  readonly sessionsBytes: number;
  /** VmRSS of a fresh worker process: idle, after `sessions` one-turn sessions, after twice as many. */
  readonly rss: { idle: number; first: number; second: number; sessions: number };
  /** The same with the worker's workflow cache capped at `evictingCache`. */
  readonly rssEvicted: { idle: number; first: number; second: number; sessions: number };
  readonly evictingCache: number;
}

/** One statement of dh's store as pg_stat_statements counted it over a run. */
export interface StoreStatement {
  readonly query: string;
  readonly calls: number;
  readonly totalMs: number;
  readonly rows: number;
}

export interface ClusterReport {
  readonly runs: readonly ClusterRun[];
  readonly units: UnitCosts;
  /** dh's store statements over the first measured run of ours on one worker process. */
  readonly statements: readonly StoreStatement[];
  readonly sessions: number;
  readonly steps: number;
  readonly rounds: number;
  readonly warmSessions: number;
  readonly wallSeconds: number;
}

const KIB = 1024;
const MIB = 1024 * 1024;

export function clusterSections(report: ClusterReport): BenchSection[] {
  const { runs, units, sessions, steps, rounds } = report;
  const counts = [...new Set(runs.map((r) => r.workers))].sort((a, b) => a - b);
  const of = (kind: ClusterRun['kind'], n: number) => runs.filter((r) => r.kind === kind && r.workers === n);
  const med = (kind: ClusterRun['kind'], n: number, pick: (r: ClusterRun) => number) => median(of(kind, n).map(pick));
  const rate = (kind: ClusterRun['kind'], n: number) => med(kind, n, (r) => r.stepsPerSecond);
  const all = (kind: ClusterRun['kind'], pick: (r: ClusterRun) => number) =>
    median(runs.filter((r) => r.kind === kind).map(pick));
  const pct = (values: readonly number[]) => values.map((v) => `${Math.round(v * 100)}%`).join(' / ');
  const perProcess = (kind: ClusterRun['kind'], n: number, pick: (r: ClusterRun) => readonly number[]) =>
    Array.from({ length: n }, (_, i) => med(kind, n, (r) => pick(r)[i] ?? 0));
  const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

  const rateRows = counts.map((n) => {
    const o = rate('ours', n);
    const b = rate('bare', n);
    return (
      `| ${n} | ${fmt(o, 1)} | ${fmt(b, 1)} | ${fmt(o / b)}× | ${fmt(o / rate('ours', 1))}× | ` +
      `${fmt(b / rate('bare', 1))}× |`
    );
  });
  const cpuRows = (['ours', 'bare'] as const).flatMap((kind) =>
    counts.map((n) => {
      const workers = med(kind, n, (r) => sum(r.cpu.perWorker));
      const server = med(kind, n, (r) => r.cpu.server);
      const postgres = med(kind, n, (r) => r.cpu.postgres);
      const bench = med(kind, n, (r) => r.cpu.bench);
      const total = med(kind, n, (r) => r.cpu.server + sum(r.cpu.perWorker) + r.cpu.postgres + r.cpu.bench);
      return (
        `| ${kind} × ${n} | ${fmt(server)} ms | ${fmt(workers)} ms | ${fmt(postgres)} ms | ${fmt(bench)} ms | ` +
        `${fmt(total)} ms | ${fmt(med(kind, n, (r) => r.busyCores))} |`
      );
    }),
  );
  const spreadRows = (['ours', 'bare'] as const).flatMap((kind) =>
    counts.map(
      (n) =>
        `| ${kind} × ${n} | ${pct(perProcess(kind, n, (r) => r.stepShares))} | ` +
        `${pct(perProcess(kind, n, (r) => r.taskShares))} | ` +
        `${perProcess(kind, n, (r) => r.cpu.perWorker)
          .map((v) => `${fmt(v)} ms`)
          .join(' / ')} |`,
    ),
  );

  const databaseRows = (['ours', 'bare'] as const).flatMap((kind) =>
    counts.map((n) => {
      const db = (pick: (r: ClusterRun) => number) => med(kind, n, pick);
      const store = db((r) => r.cpu.postgresByDatabase.store);
      const temporal = db((r) => r.cpu.postgresByDatabase.temporal);
      const visibility = db((r) => r.cpu.postgresByDatabase.visibility);
      const other = db(
        (r) =>
          r.cpu.postgres -
          r.cpu.postgresByDatabase.store -
          r.cpu.postgresByDatabase.temporal -
          r.cpu.postgresByDatabase.visibility,
      );
      return `| ${kind} × ${n} | ${fmt(store)} ms | ${fmt(temporal)} ms | ${fmt(visibility)} ms | ${fmt(other)} ms |`;
    }),
  );
  const statementSteps = sessions * steps;
  const statementRows = report.statements
    .slice(0, 8)
    .map(
      (s) =>
        `| \`${s.query.replace(/\s+/g, ' ').replace(/\|/g, '\\|').slice(0, 110)}\` | ${fmt(s.calls / statementSteps)} | ` +
        `${fmt(s.totalMs / s.calls, 3)} ms | ${fmt(s.totalMs / statementSteps, 3)} ms |`,
    );
  const statementCalls = report.statements.reduce((sum, s) => sum + s.calls, 0);
  const statementMs = report.statements.reduce((sum, s) => sum + s.totalMs, 0);

  // The two readings the section exists for, computed from the tables above.
  const top = counts.at(-1) ?? 1;
  const busiest = Math.max(...perProcess('ours', top, (r) => r.stepShares));
  const notes = [
    `Spread: at ${top} worker processes the busiest served ${Math.round(busiest * 100)}% of the model steps ` +
      `(even: ${Math.round(100 / top)}%). Scaling from 1 to ${top} processes: ours ` +
      `${fmt(rate('ours', top) / rate('ours', 1))}×, bare ${fmt(rate('bare', top) / rate('bare', 1))}×, with ` +
      `${fmt(med('ours', top, (r) => r.busyCores))} and ${fmt(med('bare', top, (r) => r.busyCores))} of 2 cores busy ` +
      `(1 process: ${fmt(med('ours', 1, (r) => r.busyCores))} and ${fmt(med('bare', 1, (r) => r.busyCores))}).`,
  ];

  const { rss, rssEvicted, evictingCache } = units;
  // RSS does not shrink per session: a fall means no per-session cost stands out from the heap's own swings.
  const perEvicted = (rssEvicted.second - rssEvicted.first) / rssEvicted.sessions / KIB;
  const storeBytes = units.eventsBytes + units.sessionsBytes;
  const unitRows = [
    `| PostgreSQL store, bytes per logged event (events + sessions tables, with indexes and TOAST) | ` +
      `${fmt(storeBytes / units.storeEvents, 0)} B | ${units.storeEvents} events of ${units.storeSessions} sessions, ` +
      `${fmt(storeBytes / MIB, 1)} MiB |`,
    `| … of which the events table | ${fmt(units.eventsBytes / units.storeEvents, 0)} B | ` +
      `${fmt(units.storeEvents / units.storeSessions, 1)} events per session, ` +
      `${fmt(units.storeEvents / (units.storeSessions * steps), 1)} per step |`,
    `| PostgreSQL store, bytes per step | ${fmt(storeBytes / (units.storeSessions * steps), 0)} B | no live-delta table: ` +
      'the store has only these two |',
    `| Temporal persistence DB growth per step, ours | ${fmt(
      all('ours', (r) => r.temporalBytesPerStep),
      0,
    )} B | ` + 'pg_database_size before/after each run ÷ its steps, median of all runs |',
    `| Temporal persistence DB growth per step, bare | ${fmt(
      all('bare', (r) => r.temporalBytesPerStep),
      0,
    )} B | same |`,
    `| Temporal visibility DB growth per session, ours / bare | ` +
      `${fmt(
        all('ours', (r) => r.visibilityBytesPerSession),
        0,
      )} B / ` +
      `${fmt(
        all('bare', (r) => r.visibilityBytesPerSession),
        0,
      )} B | same, ÷ sessions |`,
    `| Temporal history bytes per step, ours | ${fmt(
      all('ours', (r) => r.historyBytesPerStep),
      0,
    )} B | ` + 'encoded size of the fetched histories (one turn each, open run) ÷ steps |',
    `| Temporal history bytes per step, bare | ${fmt(
      all('bare', (r) => r.historyBytesPerStep),
      0,
    )} B | same |`,
    `| worker process RSS, idle | ${fmt(rss.idle / MIB, 0)} MiB | a fresh \`worker-process.ts\` 3 s after ready |`,
    `| worker process RSS per cached session | ${fmt((rss.second - rss.first) / rss.sessions / KIB, 0)} KiB | ` +
      `${rss.sessions} → ${2 * rss.sessions} one-turn idle sessions (${fmt(rss.first / MIB, 0)} → ` +
      `${fmt(rss.second / MIB, 0)} MiB); 0 → ${rss.sessions}: ${fmt((rss.first - rss.idle) / rss.sessions / KIB, 0)} KiB |`,
    `| worker process RSS per evicted session (workflow cache capped at ${evictingCache}) | ` +
      `${perEvicted > 0 ? '' : 'none measurable: '}${fmt(perEvicted, 0)} KiB | the same on a fresh worker ` +
      `with \`maxCachedWorkflows: ${evictingCache}\` (${fmt(rssEvicted.first / MIB, 0)} → ${fmt(rssEvicted.second / MIB, 0)} MiB); ` +
      `0 → ${rssEvicted.sessions}: ${fmt((rssEvicted.first - rssEvicted.idle) / rssEvicted.sessions / KIB, 0)} KiB |`,
  ];

  const command = 'npm run bench -- --only cluster';
  return [
    {
      title: 'Throughput on a Temporal cluster',
      command,
      body: [
        `Model steps per second with ${sessions} sessions started at once on a production-shaped cluster — \`temporal-server\``,
        'v1.32.0 from deploy/temporal/config/production.yaml on PostgreSQL persistence and SQL visibility',
        '(test/helpers/test-cluster.ts; the throwaway PostgreSQL runs with fsync off) — served by 1, 2 and 3 worker',
        'processes (`test/helpers/worker-process.ts`: `createSessionWorker` as `dh worker` builds it, its default 16 model',
        'and 16 tool slots, hostIds host-1…, one task queue, the PostgreSQL session store). Each session is one turn of',
        `${steps - 1} tool steps (\`echo\`) and an answer (${steps} steps) on the scripted provider (loopback, no delay, in the`,
        'bench process), from the first start to the last `turn/end` (its `at`, polled from the store). Baseline: as many',
        `bare workflows (bench/bare: two no-op activities per step, ${steps} steps) on as many bare worker processes (SDK`,
        'default slots), same cluster, from the first start to the last result. Fleets grow and shrink between rounds',
        `(1→${counts.length}, ${counts.length}→1, 1→${counts.length}); a changed fleet first runs ${report.warmSessions} uncounted`,
        `sessions. Medians of ${rounds} rounds, ours and bare interleaved. Bench wall time: ${fmt(report.wallSeconds, 0)} s.`,
        '',
        '| worker processes | ours (steps/s) | bare (steps/s) | ours / bare | ours ÷ ours × 1 | bare ÷ bare × 1 |',
        '| ---: | ---: | ---: | ---: | ---: | ---: |',
        ...rateRows,
        '',
        'CPU per step by process (median over the rounds; /proc utime+stime of the server, each worker process, and the',
        'PostgreSQL postmaster with its live and reaped backends — store and Temporal persistence alike; the bench',
        'process — scripted provider, client, store polling — from process.cpuUsage). Cores busy: all of it ÷ wall time,',
        'out of 2:',
        '',
        '| run | Temporal server | worker processes | PostgreSQL | bench process | total | cores busy |',
        '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
        ...cpuRows,
        '',
        "PostgreSQL's CPU per step by database (its client backends' /proc CPU, sampled every 200 ms and summed per",
        "database from pg_stat_activity; other: the postmaster, background processes, the bench's own connections",
        "(its store polling connects as a role of its own, left out of the store's figures and statements) and what",
        "a backend spent after its last sample before it exited). Store: dh's session store; Temporal: its",
        'persistence; visibility: its SQL visibility:',
        '',
        '| run | dh store | Temporal persistence | Temporal visibility | other |',
        '| --- | ---: | ---: | ---: | ---: |',
        ...databaseRows,
        '',
        `dh store statements over the first measured run of ours on 1 worker process (pg_stat_statements; ${fmt(
          statementCalls / statementSteps,
        )} statements and ${fmt(statementMs / statementSteps, 3)} ms of execution per step in all), by total time:`,
        '',
        '| statement | calls per step | mean | per step |',
        '| --- | ---: | ---: | ---: |',
        ...statementRows,
        '',
        'How the work spread over the worker processes (host-1 / host-2 / host-3, medians): model-step activities',
        '(bare: `bareModel`) and workflow tasks by the worker identity (`pid@host`) in the histories, and CPU per step:',
        '',
        '| run | model steps by process | workflow tasks by process | CPU per step by process |',
        '| --- | --- | --- | --- |',
        ...spreadRows,
        '',
        ...notes,
      ].join('\n'),
    },
    {
      title: 'Cluster unit costs',
      command,
      body: [
        'Unit costs for sizing, from the same run as "Throughput on a Temporal cluster" (its store holds every ours',
        'session of the run: measured, warm-up and RSS sessions, each one turn of 5 steps).',
        '',
        '| unit | value | how |',
        '| --- | ---: | --- |',
        ...unitRows,
      ].join('\n'),
    },
  ];
}
