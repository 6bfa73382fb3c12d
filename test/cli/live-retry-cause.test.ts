// With the model server down, `dh run` says why the turn makes no progress while Temporal retries the
// model call (the cause, the attempt, when the next one starts), and the worker logs that cause once per
// failed attempt — against a real worker whose base URL is a port where nothing listens.
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  sessionIdOf,
  show,
  spawnDh,
  startDhWorker,
  testStackEnv,
  type DhProcess,
  type TestStackEnv,
} from './live-harness.js';

const API_KEY = 'sk-live-retry-cause-0123456789abcdef';

/** A loopback port that was free a moment ago and is closed now: connecting to it is refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

interface LogLine {
  readonly time: string;
  readonly msg: string;
  readonly [key: string]: unknown;
}

function logLines(stderr: string): LogLine[] {
  return stderr.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      return [JSON.parse(line) as LogLine];
    } catch {
      return [];
    }
  });
}

describe('dh run while the model server is down', () => {
  let stack: TestStackEnv;
  let worker: DhProcess;
  let baseUrl: string;

  beforeAll(async () => {
    const port = await closedPort();
    baseUrl = `http://127.0.0.1:${port}/v1`;
    stack = testStackEnv(baseUrl, { DH_LIVE_TEST_KEY: API_KEY });
    worker = await startDhWorker(stack.env);
  });

  afterAll(async () => {
    await worker?.stop();
    stack?.cleanup();
  });

  it('shows the cause and the attempt while the model call is retried; the worker logs it per attempt', async () => {
    const port = new URL(baseUrl).port;
    const run = spawnDh(['run', 'say hello'], stack.env);
    const sessionId = await sessionIdOf(run);
    const [line] = await run.waitFor(
      /↻ model call failing: (.*)\(STREAM_CUT\); attempt (\d+) of 8 failed, (next in \d+ s|attempt \d+ running)/,
      60_000,
    );
    const shownAt = Date.now();
    expect(line).toContain(`127.0.0.1:${port}`);
    expect(line).toMatch(/ECONNREFUSED|connection refused/i);

    // Within a few seconds of the first failure, which the worker logged when it happened.
    const failed = () =>
      logLines(worker.stderr()).filter((l) => l.msg === 'Activity failed' && l.sessionId === sessionId);
    const first = failed()[0];
    expect(first, worker.stderr()).toBeDefined();
    expect(shownAt - Date.parse(first?.time ?? ''), line).toBeLessThan(10_000);

    // Ctrl-C still ends the turn while it waits for the next attempt.
    run.kill('SIGINT');
    const r = await run.result;
    expect(r.code, show(r)).toBe(3);
    expect(r.stderr).toMatch(/■ turn 1 ended: aborted/);
    // Each failed attempt reported once.
    const shown = [...r.stderr.matchAll(/attempt (\d+) of 8 failed/g)].map((m) => m[1]);
    expect(new Set(shown).size, r.stderr).toBe(shown.length);

    // The worker's log: one line per failed attempt with the cause (the address), the attempt and the code.
    const lines = failed();
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(lines.map((l) => l.attempt)).toEqual(lines.map((_, i) => i + 1));
    for (const l of lines) {
      expect(l).toMatchObject({ level: 'warn', activityType: 'modelStep', errorCode: 'STREAM_CUT' });
      expect(l.error).toEqual(expect.stringContaining(`127.0.0.1:${port}`));
    }
    expect(worker.stderr()).not.toContain(API_KEY);
    expect(r.stderr + r.stdout).not.toContain(API_KEY);
  });
});
