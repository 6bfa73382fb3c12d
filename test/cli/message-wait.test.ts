// `dh steer|inject|send --wait` and `dh send --if-busy` as a user runs them, against a live stack whose first
// answer the scripted provider holds mid-stream: a steer waited for until it entered a step exits 0 only after
// the answer is let go, an inject waited for until logged exits while the step still streams, a reject-if-busy
// send is refused, and a message discarded at close exits 3.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { waitForLog } from '../helpers/scenario-runtime.js';
import { dh, sessionIdOf, show, spawnDh, startLiveStack, TEST_MODEL, type LiveStack } from './live-harness.js';

describe('dh … --wait and --if-busy on a live stack', () => {
  let live: LiveStack;
  let store: SqliteSessionStore;

  beforeAll(async () => {
    live = await startLiveStack({
      models: [TEST_MODEL],
      mode: 'match',
      replies: [
        { match: { lastUserContains: 'held-task' }, text: 'held answer', hold: { afterChunks: 1, key: 'held' } },
        { match: { lastUserContains: 'steer in' }, text: 'steered' },
        { text: 'ok', repeat: 10 },
      ],
    });
    store = SqliteSessionStore.open(join(live.stack.home, 'sessions.db'));
  });
  afterAll(async () => {
    await store?.close();
    await live?.stop();
  });

  it('waits for a steer to enter a step, an inject to be logged; refuses a busy send', async () => {
    const { env } = live.stack;
    const run = spawnDh(['run', 'held-task: answer'], env);
    try {
      const id = await sessionIdOf(run);
      await waitForLog(store, id, (log) => log.some((e) => e.type === 'request/sent'), 'the request sent', 60_000);

      const steer = spawnDh(['steer', id, 'steer in, please', '--id', 'st-1', '--wait', 'entered'], env);
      // Logged while the answer is held; the steer cannot enter a step before it is let go.
      const logged = await dh(['inject', id, 'context', '--id', 'in-1', '--wait', 'logged', '--json'], env);
      expect(logged.code, show(logged)).toBe(0);
      expect(JSON.parse(logged.stdout)).toMatchObject({
        messageId: 'in-1',
        fate: { state: 'queued', target: 'next-step' },
      });
      const busy = await dh(['send', id, 'not now', '--target', 'next-step', '--if-busy', 'reject'], env);
      expect(busy.code, show(busy)).toBe(1);
      expect(busy.stderr).toMatch(/is busy: turn 1 is running/);
      const beforeRelease = await store.read(id);
      expect(beforeRelease.some((e) => e.type === 'inbox/enqueue' && e.messageId === 'st-1')).toBe(true);
      expect(beforeRelease.some((e) => e.type === 'assistant/message')).toBe(false);
      expect(steer.stdout()).toBe('steered st-1\n'); // sent; still waiting for it to enter a step

      live.provider.release('held');
      const entered = await steer.result;
      expect(entered.code, show(entered)).toBe(0);
      expect(entered.stdout).toContain('st-1 entered turn 1 step 2');
      expect((await run.result).code).toBe(0);
    } finally {
      await run.stop();
    }
  }, 120_000);

  it('exits 3 when the message waited for is discarded at close', async () => {
    const { env } = live.stack;
    const start = await dh(['run', 'first turn'], env);
    expect(start.code, show(start)).toBe(0);
    const id = /dh: session (\S+) /.exec(start.stderr)?.[1] ?? '';
    const waiting = spawnDh(
      ['send', id, 'after the close', '--no-wakeup', '--target', 'next-step', '--wait', 'entered'],
      env,
    );
    await waiting.waitFor(/queued \S+ \(next-step/, 30_000);
    const closed = await dh(['close', id], env);
    expect(closed.code, show(closed)).toBe(0);
    const result = await waiting.result;
    expect(result.code, show(result)).toBe(3);
    expect(result.stdout).toMatch(/was discarded: the session closed/);
  }, 120_000);
});
