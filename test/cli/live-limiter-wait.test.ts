// A step waiting for the fleet limiter in `dh run` (a child process, no TTY) against a worker of this process
// whose provider account has a backlog: one line says the step waits for the provider's rate limit and how
// many calls are ahead, before the answer; the answer itself is unchanged.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FleetLimiter } from '../../src/limiter/fleet-limiter.js';
import { SqliteLimiterStore } from '../../src/limiter/sqlite-limiter-store.js';
import { lateLiveStream, type LateLiveStream } from '../helpers/late-live-stream.js';
import { startHarness, type Harness } from '../helpers/session-harness.js';
import { show, spawnDh, testStackEnv, type TestStackEnv } from './live-harness.js';

describe('a wait for the fleet limiter in dh run', () => {
  let h: Harness;
  let live: LateLiveStream;
  let stack: TestStackEnv;
  let limiterStore: SqliteLimiterStore;

  beforeAll(async () => {
    live = lateLiveStream();
    limiterStore = SqliteLimiterStore.open(join(mkdtempSync(join(tmpdir(), 'dh-live-limiter-')), 'x.limits.db'));
    const limiter = new FleetLimiter({ store: limiterStore, bucket: 'acct', quota: { requestsPerMinute: 60 } });
    h = await startHarness({
      script: { replies: [{ text: 'Answered after the wait.' }] },
      plugins: [live.plugin],
      fleet: { limiter },
    });
    live.bind(h.storePath);
    stack = testStackEnv(h.provider.url, {
      DH_STORE: h.storePath,
      DH_TASK_QUEUE: h.taskQueue,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
    });
  });
  afterAll(async () => {
    await h?.stop();
    await live?.close();
    await limiterStore?.close();
    stack?.cleanup();
  });

  it('prints one line naming the wait and the calls ahead, then the answer', { timeout: 120_000 }, async () => {
    // Three calls of the fleet are already reserved on the account (one a second): this one waits ~3 s.
    for (let i = 0; i < 3; i++)
      await limiterStore.reserve([{ bucket: 'acct', cost: { requestMs: 1_000, tokenMs: 0 } }]);
    const run = spawnDh(['run', 'a task that waits its turn'], stack.env);
    const r = await run.result;
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe('Answered after the wait.\n');
    const waits = r.stderr.split('\n').filter((l) => l.startsWith('⏳ '));
    expect(waits, show(r)).toHaveLength(1);
    expect(waits[0]).toMatch(/^⏳ waiting for the provider's rate limit \([1-3] ahead, ~[1-3] s\)…$/);
  });
});
