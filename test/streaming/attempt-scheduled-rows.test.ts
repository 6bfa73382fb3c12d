// The delta row format grown by when each attempt was scheduled (a nullable `attempt_scheduled_at` column):
// every channel — memory, SQLite, PostgreSQL, sharded — hands it back as written; a table made by the
// previous version (with the progress columns) gains it on open, and that version's twelve-column insert
// still works, its rows reading without it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeltaChannel, LiveDelta, LiveDeltaDraft } from '../../src/streaming/delta-channel.js';
import { MemoryDeltaChannel } from '../../src/streaming/memory-delta-channel.js';
import { PostgresDeltaChannel } from '../../src/streaming/postgres-delta-channel.js';
import { ShardedDeltaChannel } from '../../src/streaming/sharded-delta-channel.js';
import { SqliteDeltaChannel } from '../../src/streaming/sqlite-delta-channel.js';
import { scratchSchema, type ScratchSchema } from '../helpers/scratch-schema.js';

/** The previous version's table (progress and total added) and its insert. */
const PREVIOUS_COLUMNS = 'session_id, turn, step, attempt, kind, text, tool_index, call_id, name, at, progress, total';
const PREVIOUS_BODY = `
  session_id TEXT NOT NULL, turn INTEGER NOT NULL, step INTEGER NOT NULL, attempt INTEGER NOT NULL,
  kind TEXT NOT NULL, text TEXT NOT NULL, tool_index INTEGER, call_id TEXT, name TEXT`;
const PREVIOUS_SQLITE_TABLE = `CREATE TABLE live_deltas (id INTEGER PRIMARY KEY AUTOINCREMENT, ${PREVIOUS_BODY},
  at INTEGER NOT NULL, progress REAL, total REAL)`;
const PREVIOUS_POSTGRES_TABLE = `CREATE TABLE dh_live_deltas (id BIGSERIAL PRIMARY KEY, ${PREVIOUS_BODY},
  at BIGINT NOT NULL, progress DOUBLE PRECISION, total DOUBLE PRECISION)`;
/** Recent: rows older than a day are pruned on the next write. */
const T = Date.now();
const PREVIOUS_ROW = ['s1', 1, 1, 2, 'text', 'previous writer', null, null, null, T, null, null];

/** The same step's output from the host's attempt 2 and from the shared queue's attempt 1 (scheduled 16 s later). */
const DRAFTS: LiveDeltaDraft[] = [
  { sessionId: 's1', turn: 1, step: 1, attempt: 2, attemptScheduledAt: T - 16_000, kind: 'text', text: 'host', at: T },
  { sessionId: 's1', turn: 1, step: 1, attempt: 1, attemptScheduledAt: T, kind: 'text', text: 'shared', at: T + 1 },
];
const WITHOUT_SCHEDULE = {
  sessionId: 's1',
  turn: 1,
  step: 1,
  attempt: 2,
  kind: 'text',
  text: 'previous writer',
  at: T,
};

const shape = (rows: readonly LiveDelta[]) => rows.map(({ id: _id, ...rest }) => rest);

async function roundTrip(channel: DeltaChannel, reader: DeltaChannel = channel): Promise<unknown[]> {
  for (const draft of DRAFTS) channel.publish(draft);
  await channel.flush();
  return shape(await reader.read('s1', 0));
}

describe('the attempt schedule time of a delta row', () => {
  let dir: string;
  let scratch: ScratchSchema;
  let admin: pg.Client;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dh-attempt-rows-'));
    scratch = await scratchSchema();
    admin = scratch.admin;
  });
  afterAll(async () => {
    await scratch?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('round-trips through the memory channel', async () => {
    expect(await roundTrip(new MemoryDeltaChannel())).toEqual(DRAFTS);
  });

  it("is added to a SQLite table of the previous version, whose writer's rows read without it", async () => {
    const path = join(dir, 'sessions.live.db');
    const previous = new Database(path);
    previous.exec(PREVIOUS_SQLITE_TABLE);
    const insert = `INSERT INTO live_deltas (${PREVIOUS_COLUMNS}) VALUES (${PREVIOUS_ROW.map(() => '?').join(', ')})`;
    previous.prepare(insert).run(...PREVIOUS_ROW);
    const channel = SqliteDeltaChannel.open(path);
    try {
      expect(await roundTrip(channel)).toEqual([WITHOUT_SCHEDULE, ...DRAFTS]);
      // The previous version's worker keeps inserting its twelve columns into the grown table.
      previous.prepare(insert).run(...PREVIOUS_ROW);
      expect(shape(await channel.read('s1', 0)).at(-1)).toEqual(WITHOUT_SCHEDULE);
    } finally {
      previous.close();
      await channel.close();
    }
  });

  it('is added to a PostgreSQL table of the previous version, and read through a sharded channel', async () => {
    await admin.query(`SET search_path = ${scratch.name}`);
    await admin.query(PREVIOUS_POSTGRES_TABLE);
    const insert = `INSERT INTO dh_live_deltas (${PREVIOUS_COLUMNS}) VALUES (${PREVIOUS_ROW.map((_, i) => `$${i + 1}`).join(', ')})`;
    await admin.query(insert, PREVIOUS_ROW);
    const channel = new PostgresDeltaChannel(scratch.url);
    // One shard here: the sharded channel routes and hands rows back untouched.
    const sharded = new ShardedDeltaChannel([new PostgresDeltaChannel(scratch.url)]);
    try {
      expect(await roundTrip(channel, sharded)).toEqual([WITHOUT_SCHEDULE, ...DRAFTS]);
      await admin.query(insert, PREVIOUS_ROW);
      expect(shape(await sharded.read('s1', 0)).at(-1)).toEqual(WITHOUT_SCHEDULE);
      const column = await admin.query<{ data_type: string }>(
        `SELECT data_type FROM information_schema.columns
          WHERE table_schema = $1 AND table_name = 'dh_live_deltas' AND column_name = 'attempt_scheduled_at'`,
        [scratch.name],
      );
      expect(column.rows).toEqual([{ data_type: 'bigint' }]);
    } finally {
      await channel.close();
      await sharded.close();
    }
  });
});
