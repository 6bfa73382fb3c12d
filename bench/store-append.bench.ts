// Append throughput per backend, as the workflow appends: one event per call, in order. Baseline:
// the same rows inserted with the raw driver (no validation, digest or idempotency), same run. Then
// SQLite group commit on vs off, for one session and for many sessions appending at once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { eventDigest, type SessionEvent } from '../src/core/index.js';
import { PostgresSessionStore } from '../src/stores/postgres-session-store.js';
import { SqliteSessionStore, type SqliteSessionStoreOptions } from '../src/stores/sqlite-session-store.js';
import type { SessionStore } from '../src/stores/session-store.js';
import { startPostgres } from '../test/setup/postgres.js';
import { fmt, median, type BenchSection } from './measure.js';
import { workloadEvents } from './log-workload.js';

const EVENTS = 2_000;
const RUNS = 3;
/** The concurrent variant: this many sessions, each appending this many events one per call, all at once. */
const SESSIONS = 100;
const APPENDS_PER_SESSION = 20;

async function ourAppendsPerSecond(
  store: SessionStore,
  sessionId: string,
  events: readonly SessionEvent[],
): Promise<number> {
  await store.create(sessionId, { createdAt: 0 });
  const start = performance.now();
  for (const event of events) await store.append(sessionId, event.seq, [event]);
  return events.length / ((performance.now() - start) / 1000);
}

function rawSqlitePerSecond(path: string, events: readonly SessionEvent[]): number {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE raw (session_id TEXT, seq INTEGER, body TEXT, PRIMARY KEY (session_id, seq))');
  const insert = db.prepare('INSERT INTO raw VALUES (?, ?, ?)');
  const start = performance.now();
  for (const event of events) db.transaction(() => insert.run('raw', event.seq, JSON.stringify(event))).immediate();
  const perSecond = events.length / ((performance.now() - start) / 1000);
  db.close();
  return perSecond;
}

async function rawPostgresPerSecond(url: string, table: string, events: readonly SessionEvent[]): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`CREATE TABLE ${table} (session_id TEXT, seq INTEGER, body TEXT, PRIMARY KEY (session_id, seq))`);
  const start = performance.now();
  for (const event of events)
    await client.query(`INSERT INTO ${table} VALUES ($1, $2, $3)`, ['raw', event.seq, JSON.stringify(event)]);
  const perSecond = events.length / ((performance.now() - start) / 1000);
  await client.query(`DROP TABLE ${table}`);
  await client.end();
  return perSecond;
}

/** Events per second and transactions when every log is appended (one event per call, in order) at once. */
async function sqliteConcurrentPerSecond(
  path: string,
  options: SqliteSessionStoreOptions,
  logs: ReadonlyMap<string, readonly SessionEvent[]>,
): Promise<{ perSecond: number; commits: number }> {
  let commits = 0;
  const store = SqliteSessionStore.open(path, { ...options, onCommit: () => commits++ });
  try {
    for (const sessionId of logs.keys()) await store.create(sessionId, { createdAt: 0 });
    let events = 0;
    const start = performance.now();
    await Promise.all(
      [...logs].map(async ([sessionId, log]) => {
        for (const event of log) await store.append(sessionId, event.seq, [event]);
        events += log.length;
      }),
    );
    return { perSecond: events / ((performance.now() - start) / 1000), commits };
  } finally {
    await store.close();
  }
}

/** SQLite with group commit on and off, same run: one session in order, and many sessions at once. */
async function groupCommitBench(dir: string): Promise<BenchSection> {
  const oneSession = new Map([['one', workloadEvents(EVENTS, 'one')]]);
  const manySessions = new Map(
    Array.from({ length: SESSIONS }, (_, i) => {
      const sessionId = `s${i}`;
      return [sessionId, workloadEvents(APPENDS_PER_SESSION, sessionId)] as const;
    }),
  );
  const cases = [
    { name: `1 session, ${EVENTS.toLocaleString('en')} appends in order`, logs: oneSession },
    {
      name: `${SESSIONS} sessions × ${APPENDS_PER_SESSION} appends, all sessions at once`,
      logs: manySessions,
    },
  ];
  const rows: string[] = [];
  for (const [c, { name, logs }] of cases.entries()) {
    const on: number[] = [];
    const off: number[] = [];
    const commits = { on: 0, off: 0 };
    for (let run = 0; run < RUNS; run++) {
      // Alternate which goes first, so neither always gets the warmer (or the noisier) turn.
      const order = run % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const);
      for (const mode of order) {
        const path = join(dir, `group-${c}-${run}-${mode}.db`);
        const { perSecond, commits: n } = await sqliteConcurrentPerSecond(path, { groupCommit: mode === 'on' }, logs);
        (mode === 'on' ? on : off).push(perSecond);
        commits[mode] = n;
      }
    }
    const appends = [...logs.values()].reduce((sum, log) => sum + log.length, 0);
    rows.push(
      `| ${name} | ${fmt(median(on))} | ${fmt(median(off))} | ${fmt(median(on) / median(off))}× | ` +
        `${commits.on.toLocaleString('en')} / ${commits.off.toLocaleString('en')} of ${appends.toLocaleString('en')} |`,
    );
  }
  return {
    title: 'SQLite group commit: one session vs many at once',
    command: 'npm run bench -- --only append',
    body: [
      'The SQLite store (WAL, synchronous=FULL) with group commit on (the default: the appends of one event-loop',
      'turn share one transaction and one fsync, each in its own savepoint) and off (one transaction per append),',
      'same run. Every append is one event, each session appends in order; in the second case all sessions do',
      `so at once, as a worker stepping many sessions does. Medians of ${RUNS} runs, events per second; the last`,
      'column counts the transactions of the last run (on / off).',
      '',
      '| workload | group commit on (events/s) | off (events/s) | on / off | transactions (on / off) |',
      '| --- | ---: | ---: | ---: | ---: |',
      ...rows,
    ].join('\n'),
  };
}

export async function storeAppendBench(): Promise<BenchSection[]> {
  const events = workloadEvents(EVENTS);
  events.forEach((e) => eventDigest(e)); // warm the hashing code path outside the timings
  const dir = mkdtempSync(join(tmpdir(), 'dh-bench-append-'));
  const postgres = await startPostgres();
  const rows: string[] = [];
  try {
    const sqliteOurs: number[] = [];
    const sqliteRaw: number[] = [];
    const pgOurs: number[] = [];
    const pgRaw: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const sqlite = SqliteSessionStore.open(join(dir, `ours-${run}.db`));
      sqliteOurs.push(await ourAppendsPerSecond(sqlite, `bench-${run}`, events));
      await sqlite.close();
      sqliteRaw.push(rawSqlitePerSecond(join(dir, `raw-${run}.db`), events));
      const store = await PostgresSessionStore.open(postgres.url);
      pgOurs.push(await ourAppendsPerSecond(store, `bench-${Date.now()}-${run}`, events));
      await store.close();
      pgRaw.push(await rawPostgresPerSecond(postgres.url, `raw_${run}_${Date.now()}`, events));
    }
    const row = (name: string, ours: number[], raw: number[]) =>
      `| ${name} | ${fmt(median(ours))} | ${fmt(median(raw))} | ${fmt(median(ours) / median(raw))}× |`;
    rows.push(row('SQLite (WAL, synchronous=FULL)', sqliteOurs, sqliteRaw));
    rows.push(row('PostgreSQL (test cluster: fsync=off)', pgOurs, pgRaw));
  } finally {
    await postgres.stop();
  }
  let groupCommit: BenchSection;
  try {
    groupCommit = await groupCommitBench(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return [
    {
      title: 'Append throughput per backend',
      command: 'npm run bench -- --only append',
      body: [
        `${EVENTS.toLocaleString('en')} events of a realistic session appended one per call, in order, as the workflow`,
        'does (each call: validation on append, digest, idempotency checks, one transaction). Baseline: the same',
        `rows inserted by the raw driver, one transaction each, same run. Medians of ${RUNS} runs, events per second.`,
        'The PostgreSQL figures come from the throwaway test cluster, which runs with fsync off.',
        '',
        '| backend | dh store (events/s) | raw driver (events/s) | ratio |',
        '| --- | ---: | ---: | ---: |',
        ...rows,
      ].join('\n'),
    },
    groupCommit,
  ];
}
