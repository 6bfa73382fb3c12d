// Append throughput per backend, as the workflow appends: one event per call, in order. Baseline:
// the same rows inserted with the raw driver (no validation, digest or idempotency), same run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { eventDigest, type SessionEvent } from '../src/core/index.js';
import { PostgresSessionStore } from '../src/stores/postgres-session-store.js';
import { SqliteSessionStore } from '../src/stores/sqlite-session-store.js';
import type { SessionStore } from '../src/stores/session-store.js';
import { startPostgres } from '../test/setup/postgres.js';
import { fmt, median, type BenchSection } from './measure.js';
import { workloadEvents } from './log-workload.js';

const EVENTS = 2_000;
const RUNS = 3;

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
  ];
}
