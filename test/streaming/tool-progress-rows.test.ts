// The delta row format grown by tool progress (nullable `progress` and `total` columns): a side channel
// made by an earlier version gains them on open, its rows read as before, an earlier writer's insert
// still works, and progress rows round-trip — in a SQLite `.live.db` and in a PostgreSQL table. Progress
// drafts are never merged with each other the way text fragments are.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coalesce, type LiveDelta, type LiveDeltaDraft } from '../../src/streaming/delta-channel.js';
import { PostgresDeltaChannel } from '../../src/streaming/postgres-delta-channel.js';
import { scratchSchema, type ScratchSchema } from '../helpers/scratch-schema.js';
import { SqliteDeltaChannel } from '../../src/streaming/sqlite-delta-channel.js';

/** The table as the first release created it, and that release's insert (ten columns). */
const OLD_COLUMNS = 'session_id, turn, step, attempt, kind, text, tool_index, call_id, name, at';
const OLD_SQLITE_TABLE = `
CREATE TABLE live_deltas (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL, turn INTEGER NOT NULL, step INTEGER NOT NULL, attempt INTEGER NOT NULL,
  kind TEXT NOT NULL, text TEXT NOT NULL, tool_index INTEGER, call_id TEXT, name TEXT, at INTEGER NOT NULL
);
CREATE INDEX live_deltas_by_session ON live_deltas (session_id, id);`;
const OLD_POSTGRES_TABLE = `
CREATE TABLE dh_live_deltas (
  id BIGSERIAL PRIMARY KEY,
  session_id TEXT NOT NULL, turn INTEGER NOT NULL, step INTEGER NOT NULL, attempt INTEGER NOT NULL,
  kind TEXT NOT NULL, text TEXT NOT NULL, tool_index INTEGER, call_id TEXT, name TEXT, at BIGINT NOT NULL
);
CREATE INDEX dh_live_deltas_by_session ON dh_live_deltas (session_id, id);`;
/** Recent: rows older than a day are pruned on the next write. */
const T = Date.now();
const OLD_ROW = ['s1', 1, 1, 1, 'text', 'Hello', null, null, null, T + 1_000];

const base = { sessionId: 's1', turn: 1, step: 1, attempt: 1 } as const;
const text = (t: string, at = T + 1_000): LiveDeltaDraft => ({ ...base, kind: 'text', text: t, at });
/** A progress draft of call c1; `total: null` leaves the total out. */
const progress = (n: number, message = `part ${n}`, total: number | null = 3): LiveDeltaDraft => ({
  ...base,
  kind: 'tool-progress',
  text: message,
  callId: 'c1',
  name: 'count_up',
  progress: n,
  ...(total !== null ? { total } : {}),
  at: T + 2_000 + Math.ceil(n),
});

/** What a reader sees of a row, without its channel-assigned id. */
const shape = (rows: readonly LiveDelta[]) => rows.map(({ id: _id, ...rest }) => rest);

const EXPECTED = [
  { ...base, kind: 'text', text: 'Hello', at: T + 1_000 },
  {
    ...base,
    kind: 'tool-progress',
    text: 'part 1',
    callId: 'c1',
    name: 'count_up',
    progress: 1,
    total: 3,
    at: T + 2_001,
  },
  // No message, no total: the row carries '' and NULL, the reader leaves them out.
  { ...base, kind: 'tool-progress', text: '', callId: 'c1', name: 'count_up', progress: 2.5, at: T + 2_003 },
  { ...base, kind: 'text', text: 'old writer', at: T + 3_000 },
];

describe('tool-progress rows in a SQLite side channel made by an earlier version', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'dh-progress-rows-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('gains the columns on open; old rows, an old writer and new progress rows all read back', async () => {
    const path = join(dir, 'sessions.live.db');
    const old = new Database(path);
    old.exec(OLD_SQLITE_TABLE);
    old.prepare(`INSERT INTO live_deltas (${OLD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(...OLD_ROW);
    old.close();

    const channel = SqliteDeltaChannel.open(path);
    // A second process opening the same file finds the columns there (no second ALTER).
    const reader = SqliteDeltaChannel.open(path);
    try {
      channel.publish(progress(1));
      channel.publish(progress(2.5, '', null));
      await channel.flush();
      // A worker of the earlier version keeps inserting its ten columns into the grown table.
      const oldWriter = new Database(path);
      oldWriter
        .prepare(`INSERT INTO live_deltas (${OLD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
        .run('s1', 1, 1, 1, 'text', 'old writer', null, null, null, T + 3_000);
      // What an earlier reader selects (`SELECT *`, reading the columns it knows) is unchanged for old rows.
      const first = oldWriter.prepare('SELECT * FROM live_deltas ORDER BY id LIMIT 1').get() as Record<string, unknown>;
      expect(first).toMatchObject({ kind: 'text', text: 'Hello', tool_index: null, progress: null, total: null });
      oldWriter.close();
      expect(shape(await reader.read('s1', 0))).toEqual(EXPECTED);
    } finally {
      await channel.close();
      await reader.close();
    }
  });
});

describe('tool-progress rows in a PostgreSQL table made by an earlier version', () => {
  let admin: pg.Client;
  let schema: string;
  let url: string;
  let scratch: ScratchSchema;
  beforeAll(async () => {
    scratch = await scratchSchema();
    ({ admin, url, name: schema } = scratch);
  });
  afterAll(() => scratch?.drop());

  it('gains the columns on first use; old rows, an old writer and new progress rows all read back', async () => {
    await admin.query(`SET search_path = ${schema}`);
    await admin.query(OLD_POSTGRES_TABLE);
    await admin.query(
      `INSERT INTO dh_live_deltas (${OLD_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      OLD_ROW,
    );

    const channel = new PostgresDeltaChannel(url);
    const reader = new PostgresDeltaChannel(url);
    try {
      channel.publish(progress(1));
      channel.publish(progress(2.5, '', null));
      await channel.flush();
      await admin.query(
        `INSERT INTO dh_live_deltas (${OLD_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        ['s1', 1, 1, 1, 'text', 'old writer', null, null, null, T + 3_000],
      );
      const columns = await admin.query<{ column_name: string; data_type: string }>(
        `SELECT column_name, data_type FROM information_schema.columns
          WHERE table_schema = $1 AND table_name = 'dh_live_deltas' AND column_name IN ('progress', 'total')
          ORDER BY column_name`,
        [schema],
      );
      expect(columns.rows).toEqual([
        { column_name: 'progress', data_type: 'double precision' },
        { column_name: 'total', data_type: 'double precision' },
      ]);
      expect(shape(await reader.read('s1', 0))).toEqual(EXPECTED);
    } finally {
      await channel.close();
      await reader.close();
    }
  });
});

describe('coalesce', () => {
  it('merges text fragments but keeps every progress update a row of its own', () => {
    const merged = coalesce([text('a'), text('b'), progress(1), progress(2), progress(3)]);
    expect(merged.map((d) => `${d.kind}:${d.text}`)).toEqual([
      'text:ab',
      'tool-progress:part 1',
      'tool-progress:part 2',
      'tool-progress:part 3',
    ]);
  });
});
