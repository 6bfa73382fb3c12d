// The embedded local stack, with no TEMPORAL_ADDRESS: `dh up` starts a Temporal dev server on a
// persistent db file and a background worker, `dh status` sees them, `dh run` uses them, a second
// `dh up` reuses them, `dh down` stops them, and the next `dh up` still has the sessions.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../src/local-stack/dev-server.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { dh, show, testStackEnv, TEST_MODEL, type TestStackEnv } from './live-harness.js';

const ANSWER = 'Answered by the embedded stack.';

describe('the embedded local stack', () => {
  let provider: ScriptedProvider;
  let stack: TestStackEnv;
  let env: NodeJS.ProcessEnv;
  let port: number;
  let uiPort: number;

  beforeAll(async () => {
    provider = await startScriptedProvider({
      script: { models: [TEST_MODEL], mode: 'ordered', replies: [{ text: ANSWER }] },
    });
    stack = testStackEnv(provider.url);
    port = await freePort();
    uiPort = await freePort();
    env = {
      ...stack.env,
      DH_TEMPORAL_PORT: String(port),
      DH_TEMPORAL_UI_PORT: String(uiPort),
      TEMPORAL_CLI_PATH: inject('temporalCliPath'),
    };
    delete env.TEMPORAL_ADDRESS;
    delete env.TEMPORAL_NAMESPACE;
  });

  afterAll(async () => {
    if (env) await dh(['down'], env);
    await provider?.close();
    stack?.cleanup();
  });

  it('up, status, run, up again (reused), down, and up again keeps the sessions', { timeout: 150_000 }, async () => {
    const up = await dh(['up', '--json'], env, 120_000);
    expect(up.code, show(up)).toBe(0);
    expect(JSON.parse(up.stdout)).toMatchObject({
      temporal: 'running',
      worker: 'running',
      address: `127.0.0.1:${port}`,
      uiAddress: `127.0.0.1:${uiPort}`,
    });
    const record = readFileSync(join(stack.home, 'stack.json'), 'utf8');

    const status = await dh(['status'], env);
    expect(status.code, show(status)).toBe(0);
    expect(status.stdout).toContain(`temporal  running  127.0.0.1:${port}`);
    expect(status.stdout).toContain(`ui        http://127.0.0.1:${uiPort}`);

    const run = await dh(['run', 'hello embedded', '--json'], env);
    expect(run.code, show(run)).toBe(0);
    const { sessionId, answer, reason } = JSON.parse(run.stdout) as {
      sessionId: string;
      answer: string;
      reason: string;
    };
    expect({ answer, reason }).toEqual({ answer: ANSWER, reason: 'completed' });

    // A second `up` finds both processes alive and answering: same pids.
    const again = await dh(['up'], env);
    expect(again.code, show(again)).toBe(0);
    expect(again.stderr).not.toMatch(/starting/);
    expect(readFileSync(join(stack.home, 'stack.json'), 'utf8')).toBe(record);

    const down = await dh(['down', '--json'], env);
    expect(down.code, show(down)).toBe(0);
    const { stopped } = JSON.parse(down.stdout) as { stopped: string[] };
    expect(stopped.map((s) => s.split(' ')[0])).toEqual(['worker', 'temporal']);
    const after = await dh(['status', '--json'], env);
    expect(JSON.parse(after.stdout)).toMatchObject({ temporal: 'stopped', worker: 'stopped', address: null });
    const offline = await dh(['ls', '--json'], env);
    expect(JSON.parse(offline.stdout)).toEqual([expect.objectContaining({ sessionId, status: '-' })]);

    // The Temporal db file kept the session's workflow: it is still there, idle, after a restart.
    const restarted = await dh(['up', '--no-worker'], env, 120_000);
    expect(restarted.code, show(restarted)).toBe(0);
    const ls = await dh(['ls', '--json'], env);
    expect(ls.code, show(ls)).toBe(0);
    const [row] = JSON.parse(ls.stdout) as { sessionId: string; status: string }[];
    expect(row?.sessionId).toBe(sessionId);
    // `idle` from the DhSessionStatus search attribute (plain `running` where the workflow does not set it).
    expect(['idle', 'running']).toContain(row?.status);
  });
});
