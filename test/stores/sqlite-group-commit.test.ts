// Group commit in the SQLite store: appends of one event-loop turn share one transaction (one fsync),
// each in its own savepoint, and resolve only after that COMMIT; without it, one transaction per append.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCode, StoreError } from '../../src/core/errors.js';
import { verifyChain } from '../../src/stores/log-chain.js';
import type { AppendResult } from '../../src/stores/session-store.js';
import { SqliteSessionStore, type SqliteSessionStoreOptions } from '../../src/stores/sqlite-session-store.js';
import { T0, inboxEnqueue, sampleLog, sessionStart, stepStart, turnStart } from '../helpers/event-builders.js';
import { describeSessionStoreConformance } from './session-store-conformance.js';
import { sqliteStoreBackend } from './sqlite-store-backend.js';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

// The whole contract again with group commit off, so the path benchmarks compare against stays correct.
describeSessionStoreConformance('SqliteSessionStore (groupCommit: false)', () =>
  sqliteStoreBackend({ groupCommit: false }),
);

describe('SqliteSessionStore group commit', () => {
  let dir: string;
  let opened: SqliteSessionStore[];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dh-sqlite-group-'));
    opened = [];
  });

  afterEach(async () => {
    for (const store of opened) await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A store on `name` in this test's directory; `commits` lists what each COMMIT of appends committed. */
  function open(name = 'sessions.db', options: SqliteSessionStoreOptions = {}) {
    const commits: number[] = [];
    const store = SqliteSessionStore.open(join(dir, name), {
      ...options,
      onCommit: (appends) => commits.push(appends),
    });
    opened.push(store);
    return { store, commits, path: join(dir, name) };
  }

  async function created(store: SqliteSessionStore, ...sessionIds: string[]): Promise<void> {
    for (const id of sessionIds) await store.create(id, { createdAt: T0 });
  }

  /** The rejection of `promise` (fails the test if it resolves). */
  async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
    return promise.then(
      (value) => expect.fail(`expected a rejection, got ${JSON.stringify(value)}`),
      (error: unknown) => error,
    );
  }

  it('commits 50 concurrent appends across 50 sessions in fewer transactions than appends', async () => {
    const { store, commits } = open();
    const ids = Array.from({ length: 50 }, (_, i) => `s${i}`);
    await created(store, ...ids);
    const results = await Promise.all(ids.map((id) => store.append(id, 0, [sessionStart(id)])));
    expect(results.map((r) => r.receipts.map((x) => x.status))).toEqual(ids.map(() => ['appended']));
    for (const id of ids) expect(await store.read(id)).toEqual([sessionStart(id)]);
    expect(commits.reduce((a, b) => a + b, 0)).toBe(50);
    expect(commits.length).toBeLessThan(50);
    expect(commits).toEqual([50]); // all were called in one turn: one transaction

    // The same with group commit off: one transaction per append (so the hook counts honestly).
    const off = open('off.db', { groupCommit: false });
    await created(off.store, ...ids);
    await Promise.all(ids.map((id) => off.store.append(id, 0, [sessionStart(id)])));
    expect(off.commits).toEqual(ids.map(() => 1));
  });

  it('chains the appends of one session within one group: each links to the one before it in the same transaction', async () => {
    const { store, commits } = open();
    await created(store, 'chained');
    const log = sampleLog('chained', 2);
    // Called in one turn without waiting: one group, each append in its savepoint after the previous one.
    const results = await Promise.all(log.map((event) => store.append('chained', event.seq, [event])));
    expect(commits).toEqual([log.length]);
    const chain = await store.readChain('chained');
    expect(verifyChain(chain)).toMatchObject({ ok: true, links: log.length });
    expect(results.map((r) => r.receipts[0]?.chain)).toEqual(chain.links.map((l) => l.chain));
  });

  it('rejects only the append with a wrong expectedSeq, with the same error as without group commit', async () => {
    const on = open();
    const off = open('off.db', { groupCommit: false });
    const outcomes: Array<PromiseSettledResult<AppendResult>[]> = [];
    for (const { store } of [on, off]) {
      await created(store, 'a', 'b', 'c', 'd');
      await Promise.all(['a', 'b', 'c', 'd'].map((id) => store.append(id, 0, [sessionStart(id)])));
      outcomes.push(
        await Promise.allSettled([
          store.append('a', 1, [turnStart(1, 1)]),
          store.append('b', 3, [turnStart(3, 1)]), // beyond the head: SEQ_GAP
          store.append('c', 0, [inboxEnqueue(0, 'm0')]), // a taken seq, another event: SEQ_CONFLICT
          store.append('d', 1, [turnStart(1, 1), stepStart(2, 1, 1)]),
        ]),
      );
    }
    const [withGroup, without] = outcomes as [
      PromiseSettledResult<AppendResult>[],
      PromiseSettledResult<AppendResult>[],
    ];
    expect(on.commits.at(-1)).toBe(2); // a and d, together, in the transaction b and c rolled back out of
    expect(withGroup.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    for (const i of [1, 2]) {
      const error = (withGroup[i] as PromiseRejectedResult).reason as StoreError;
      const expected = (without[i] as PromiseRejectedResult).reason as StoreError;
      expect(error).toBeInstanceOf(StoreError);
      expect(error.constructor).toBe(expected.constructor);
      expect(error.code).toBe(expected.code);
      expect(error.message).toBe(expected.message);
      expect(error.details).toEqual(expected.details);
    }
    expect(((withGroup[1] as PromiseRejectedResult).reason as StoreError).code).toBe(ErrorCode.SeqGap);
    expect(((withGroup[2] as PromiseRejectedResult).reason as StoreError).code).toBe(ErrorCode.SeqConflict);
    expect(await on.store.read('a')).toEqual([sessionStart('a'), turnStart(1, 1)]);
    expect(await on.store.read('b')).toEqual([sessionStart('b')]);
    expect(await on.store.read('c')).toEqual([sessionStart('c')]);
    expect(await on.store.read('d')).toEqual([sessionStart('d'), turnStart(1, 1), stepStart(2, 1, 1)]);
  });

  it('rolls back only the append that fails midway (its savepoint); its batch-mates commit', async () => {
    const on = open();
    const off = open('off.db', { groupCommit: false });
    const errors: unknown[] = [];
    for (const { store, path } of [on, off]) {
      await created(store, 's', 't');
      await Promise.all(['s', 't'].map((id) => store.append(id, 0, [sessionStart(id)])));
      // Fails the second row of the append to s, after its first row was inserted.
      const raw = new Database(path);
      raw.exec(`CREATE TRIGGER boom BEFORE INSERT ON events WHEN NEW.session_id = 's' AND NEW.seq = 2
                BEGIN SELECT RAISE(ABORT, 'boom'); END`);
      raw.close();
      const [failing, mate] = await Promise.allSettled([
        store.append('s', 1, [turnStart(1, 1), stepStart(2, 1, 1)]),
        store.append('t', 1, [turnStart(1, 1), stepStart(2, 1, 1)]),
      ]);
      expect(failing.status).toBe('rejected');
      errors.push((failing as PromiseRejectedResult).reason);
      expect(mate.status).toBe('fulfilled');
      expect(await store.read('s')).toEqual([sessionStart('s')]); // not even its first row
      expect(await store.read('t')).toEqual([sessionStart('t'), turnStart(1, 1), stepStart(2, 1, 1)]);
    }
    expect(on.commits.at(-1)).toBe(1);
    expect(errors[0]).toMatchObject({ code: 'SQLITE_CONSTRAINT_TRIGGER', message: 'boom' });
    expect((errors[0] as Error).constructor).toBe((errors[1] as Error).constructor);
    expect(errors[0]).toMatchObject({
      code: (errors[1] as { code: string }).code,
      message: (errors[1] as Error).message,
    });
  });

  it('retries an append that hit a unique violation in a later group, as without group commit', async () => {
    const path = join(dir, 'racy.db');
    const commits: number[] = [];
    const racer: { db?: Database.Database } = {};
    const store = SqliteSessionStore.open(path, {
      onCommit: (appends) => {
        commits.push(appends);
        racer.db?.exec('DELETE FROM armed'); // the "racing writer" is gone by the retry
      },
    });
    opened.push(store);
    await created(store, 'racy', 'calm');
    const raw = (racer.db = new Database(path));
    try {
      // While armed, inserting into racy's log hits a UNIQUE constraint, as a racing writer would.
      raw.exec(`CREATE TABLE armed (x INTEGER PRIMARY KEY); INSERT INTO armed VALUES (1);
                CREATE TRIGGER race BEFORE INSERT ON events WHEN NEW.session_id = 'racy'
                  AND EXISTS (SELECT 1 FROM armed) BEGIN INSERT INTO armed VALUES (1); END`);
      const [racy, calm] = await Promise.all([
        store.append('racy', 0, [sessionStart('racy')]),
        store.append('calm', 0, [sessionStart('calm')]),
      ]);
      expect(racy.receipts.map((r) => r.status)).toEqual(['appended']);
      expect(calm.receipts.map((r) => r.status)).toEqual(['appended']);
      expect(commits).toEqual([1, 1]); // calm in the first group, racy's retry in the next
      expect(await store.read('racy')).toEqual([sessionStart('racy')]);
    } finally {
      raw.close();
    }
  });

  it('runs appends to one session queued in the same turn in call order', async () => {
    const { store, commits } = open();
    await created(store, 's');
    const start = store.append('s', 0, [sessionStart('s')]);
    const turn = store.append('s', 1, [turnStart(1, 1)]); // sees the first one's row: its head is 1
    const stale = store.append('s', 1, [inboxEnqueue(1, 'late')]); // seq 1 is taken by then
    const step = store.append('s', 2, [stepStart(2, 1, 1)]);
    const retry = store.append('s', 1, [turnStart(1, 1)]); // the same event again: existing
    expect((await start).head).toBe(1);
    expect((await turn).receipts.map((r) => [r.seq, r.status])).toEqual([[1, 'appended']]);
    const error = await rejectionOf(stale);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe(ErrorCode.SeqConflict);
    expect((await step).head).toBe(3);
    expect((await retry).receipts.map((r) => [r.seq, r.status])).toEqual([[1, 'existing']]);
    expect(commits).toEqual([4]);
    expect(await store.read('s')).toEqual([sessionStart('s'), turnStart(1, 1), stepStart(2, 1, 1)]);

    // Called in the other order, the later seq comes first and finds a gap.
    const early = store.append('s', 4, [stepStart(4, 1, 2)]);
    const next = store.append('s', 3, [inboxEnqueue(3, 'm3')]);
    expect(((await rejectionOf(early)) as StoreError).code).toBe(ErrorCode.SeqGap);
    expect((await next).head).toBe(4);
  });

  it('resolves an append only once it is committed: a second connection sees it', async () => {
    const { store, path } = open();
    await created(store, 's');
    const pending = store.append('s', 0, [sessionStart('s'), turnStart(1, 1)]);
    const other = SqliteSessionStore.open(path);
    opened.push(other);
    expect(await other.read('s')).toEqual([]); // still queued, not yet written
    const result = await pending;
    expect(result.head).toBe(2);
    // A fresh connection, opened only now: the rows are in the file, not in a pending batch.
    const fresh = SqliteSessionStore.open(path);
    opened.push(fresh);
    expect(await fresh.read('s')).toEqual([sessionStart('s'), turnStart(1, 1)]);
    expect(await other.read('s')).toEqual([sessionStart('s'), turnStart(1, 1)]);
  });

  it('keeps what was reported appended when the process is killed right after', async () => {
    const path = join(dir, 'killed.db');
    // A child appends to 20 sessions at once, prints once all resolved, and kills itself (no close).
    const script = `
      import { SqliteSessionStore } from './src/stores/sqlite-session-store.ts';
      import { sessionStart } from './test/helpers/event-builders.ts';
      const store = SqliteSessionStore.open(${JSON.stringify(path)});
      const ids = Array.from({ length: 20 }, (_, i) => 'k' + i);
      for (const id of ids) await store.create(id, { createdAt: 0 });
      await Promise.all(ids.map((id) => store.append(id, 0, [sessionStart(id)])));
      process.stdout.write('appended\\n', () => process.kill(process.pid, 'SIGKILL'));
    `;
    const child = promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: REPO_ROOT,
    });
    const error = (await rejectionOf(child)) as { signal?: string; stdout?: string; stderr?: string };
    expect(error.stderr).toBe('');
    expect(error.signal).toBe('SIGKILL');
    expect(error.stdout).toBe('appended\n');
    const { store } = open('killed.db');
    for (let i = 0; i < 20; i++) expect(await store.read(`k${i}`)).toEqual([sessionStart(`k${i}`)]);
  }, 60_000);

  it('settles every pending append on close, and fails an append after close as without group commit', async () => {
    const { store, commits, path } = open();
    await created(store, 'a', 'b');
    const pending = [
      store.append('a', 0, [sessionStart('a')]),
      store.append('b', 0, [sessionStart('b')]),
      store.append('b', 5, [turnStart(5, 1)]), // SEQ_GAP
      store.append('a', 1, [turnStart(1, 1)]),
    ];
    await store.close();
    const settled = await Promise.allSettled(pending);
    expect(settled.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(commits).toEqual([3]);
    const reopened = open();
    expect(await reopened.store.read('a')).toEqual([sessionStart('a'), turnStart(1, 1)]);

    const off = SqliteSessionStore.open(path, { groupCommit: false });
    await off.close();
    const expected = (await rejectionOf(off.append('a', 2, [stepStart(2, 1, 1)]))) as Error;
    const error = (await rejectionOf(store.append('a', 2, [stepStart(2, 1, 1)]))) as Error;
    expect(error.constructor).toBe(expected.constructor);
    expect(error.message).toBe(expected.message);
    expect(error.message).toMatch(/not open/);
    // validation still comes first, closed or not
    await expect(store.append('a', -1, [])).rejects.toThrow(RangeError);
  });

  it('fails every append of a group whose transaction cannot start, each with the error it gets alone', async () => {
    const on = open('busy.db', { busyTimeoutMs: 0 });
    const off = open('busy.db', { busyTimeoutMs: 0, groupCommit: false });
    await created(on.store, 'a', 'b');
    const blocker = new Database(on.path);
    try {
      blocker.prepare('BEGIN IMMEDIATE').run();
      const grouped = await Promise.allSettled([
        on.store.append('a', 0, [sessionStart('a')]),
        on.store.append('b', 0, [sessionStart('b')]),
      ]);
      const alone = await Promise.allSettled([off.store.append('a', 0, [sessionStart('a')])]);
      for (const outcome of [...grouped, ...alone]) {
        expect(outcome.status).toBe('rejected');
        expect((outcome as PromiseRejectedResult).reason).toMatchObject({ code: 'SQLITE_BUSY' });
      }
      expect(on.commits).toEqual([]);
      blocker.prepare('ROLLBACK').run();
    } finally {
      blocker.close();
    }
    // nothing was left half-done: the store appends normally afterwards
    expect((await on.store.append('a', 0, [sessionStart('a')])).head).toBe(1);
  });

  it('fails every append of a group whose COMMIT fails, and commits none of them', async () => {
    const { store, commits, path } = open();
    await created(store, 'doomed', 'mate');
    // An append to "doomed" leaves a deferred foreign-key violation, which only COMMIT checks.
    const raw = new Database(path);
    raw.exec(`CREATE TABLE parent (id TEXT PRIMARY KEY);
              CREATE TABLE child (pid TEXT REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);
              CREATE TRIGGER doom AFTER INSERT ON events WHEN NEW.session_id = 'doomed'
                BEGIN INSERT INTO child VALUES ('nobody'); END`);
    raw.close();
    const outcomes = await Promise.allSettled([
      store.append('mate', 0, [sessionStart('mate')]),
      store.append('doomed', 0, [sessionStart('doomed')]),
    ]);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      expect((outcome as PromiseRejectedResult).reason).toMatchObject({ code: 'SQLITE_CONSTRAINT_FOREIGNKEY' });
    }
    expect(commits).toEqual([]);
    expect(await store.read('mate')).toEqual([]);
    expect(await store.read('doomed')).toEqual([]);
    // the transaction was rolled back, not left open: the next group commits
    expect((await store.append('mate', 0, [sessionStart('mate')])).head).toBe(1);
    expect(commits).toEqual([1]);
  });

  it('bounds a group to 256 appends; the rest commit in the next turn', async () => {
    const { store, commits } = open();
    const ids = Array.from({ length: 600 }, (_, i) => `s${i}`);
    await created(store, ...ids);
    await Promise.all(ids.map((id) => store.append(id, 0, [sessionStart(id)])));
    expect(commits).toEqual([256, 256, 88]);
    expect((await store.list()).every((s) => s.head === 1)).toBe(true);
  });

  it('bounds a group by the size of its rows', async () => {
    const { store, commits } = open();
    const ids = Array.from({ length: 6 }, (_, i) => `s${i}`);
    await created(store, ...ids);
    const big = 'x'.repeat(1024 * 1024); // just over 1 MiB per append: three fit in a 4 MiB group
    await Promise.all(ids.map((id) => store.append(id, 0, [sessionStart(id), inboxEnqueue(1, 'big', big)])));
    expect(commits).toEqual([3, 3]);
    expect((await store.read('s5'))[1]).toEqual(inboxEnqueue(1, 'big', big));
  });
});
