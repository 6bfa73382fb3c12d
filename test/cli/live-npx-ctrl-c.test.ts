// Ctrl-C under the README's form, `npx dh run`: the terminal signals the whole process group and npm
// forwards its own copy to dh, so one keypress reaches dh twice. It must still be one Ctrl-C (interrupt
// the turn, exit 3), and a second keypress a second later must still detach (exit 130).
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import {
  sessionIdOf,
  show,
  spawnDh,
  startLiveStack,
  testStackEnv,
  TEST_MODEL,
  type LiveStack,
  type TestStackEnv,
} from './live-harness.js';

const SLOW = 'Counting slowly: one two three four five six seven eight nine ten eleven twelve thirteen fourteen.';

describe('Ctrl-C under npx dh run', () => {
  let provider: ScriptedProvider;
  let stack: TestStackEnv;
  let live: LiveStack;

  beforeAll(async () => {
    live = await startLiveStack({
      models: [TEST_MODEL],
      mode: 'match',
      // Minutes long: only the interrupt can end it, also under load.
      replies: [{ match: { lastUserContains: 'ctrl-c-task' }, text: SLOW.repeat(20), chunkSize: 2, chunkDelayMs: 300 }],
    });
    ({ provider, stack } = live);
  });

  afterAll(() => live?.stop());

  it('one Ctrl-C to the process group interrupts the turn: exit 3, the turn ended aborted', async () => {
    const run = spawnDh(['run', 'ctrl-c-task: count slowly'], stack.env, { via: 'npx' });
    const sessionId = await sessionIdOf(run);
    await run.waitFor(/Counting/, 60_000);
    run.kill('SIGINT');
    const r = await run.result;
    expect(r.code, show(r)).toBe(3);
    expect(r.stderr).toMatch(/interrupting the turn/);
    expect(r.stderr).not.toMatch(/detached/);
    expect(r.stderr).toMatch(/■ turn 1 ended: aborted/);
    const store = SqliteSessionStore.open(join(stack.home, 'sessions.db'));
    try {
      const ends = (await store.read(sessionId)).flatMap((e) => (e.type === 'turn/end' ? [e.reason] : []));
      expect(ends).toEqual(['aborted']);
    } finally {
      await store.close();
    }
  });

  it('a second Ctrl-C a second later detaches: exit 130', async () => {
    // No worker polls this stack's queue: nothing ends the turn, so only the second Ctrl-C can end dh.
    const idle = testStackEnv(provider.url);
    try {
      // DH_TRACE_TIMING: `accepted` is printed once the Ctrl-C handler is installed.
      const run = spawnDh(['run', 'ctrl-c-task: count slowly'], { ...idle.env, DH_TRACE_TIMING: '1' }, { via: 'npx' });
      await run.waitFor(/dh-timing: accepted/);
      run.kill('SIGINT');
      await run.waitFor(/interrupting the turn/);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      run.kill('SIGINT');
      const r = await run.result;
      expect(r.code, show(r)).toBe(130);
      expect(r.stderr).toMatch(/detached; the session keeps running/);
      expect(r.stderr.match(/interrupting the turn/g)).toHaveLength(1);
    } finally {
      idle.cleanup();
    }
  });
});
