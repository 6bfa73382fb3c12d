// dh commands on a task queue no worker polls (a cluster where the dh command lacks the workers' DH_TASK_QUEUE)
// say so within seconds instead of waiting silently: `dh run` and `dh attach` warn, the attach says when a worker
// appears and the run finishes its turn; `dh steer` from a command with another queue names the session's own; `dh chat` shows it
// on screen. Against the run's real Temporal server, with `dh` as child processes and in a real pty.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { KEYS, startPty } from '../helpers/pty-terminal.js';
import {
  dh,
  sessionIdOf,
  show,
  spawnDh,
  startDhWorker,
  testStackEnv,
  TEST_MODEL,
  type TestStackEnv,
} from './live-harness.js';
import { DH_BIN } from './operator-cli.js';

describe('dh on a task queue no worker polls', () => {
  let provider: ScriptedProvider;
  let stack: TestStackEnv;

  beforeAll(async () => {
    provider = await startScriptedProvider({
      script: { models: [TEST_MODEL], mode: 'match', replies: [{ text: 'done, once a worker came', repeat: 20 }] },
    });
    stack = testStackEnv(provider.url);
  });

  afterAll(async () => {
    await provider?.close();
    stack?.cleanup();
  });

  it('dh run warns with the queue and the variable, then goes on once a worker polls it', async () => {
    const queue = stack.env.DH_TASK_QUEUE as string;
    const run = spawnDh(['run', 'anyone there?'], stack.env);
    try {
      const sessionId = await sessionIdOf(run);
      const warning = await run.waitFor(/warning: no worker is polling task queue "([^"]+)"[^\n]*/, 30_000);
      expect(warning[1]).toBe(queue);
      expect(warning[0]).toContain(`session ${sessionId} waits until one does`);
      expect(warning[0]).toContain(`DH_TASK_QUEUE=${queue}`);
      expect(warning[0]).toContain('set DH_TASK_QUEUE to that queue for dh commands too');

      // A one-shot message to it says the same, and exits (the signal is durable in the history).
      const steer = await dh(['steer', sessionId, 'still there?'], stack.env);
      expect(steer.code, show(steer)).toBe(0);
      expect(steer.stderr).toContain(`no worker is polling task queue "${queue}"`);

      // From a dh command configured with another queue: the session stays on its own, and the advice says so.
      const other = await dh(['inject', sessionId, 'context'], { ...stack.env, DH_TASK_QUEUE: `${queue}-other` });
      expect(other.code, show(other)).toBe(0);
      expect(other.stderr).toContain(`no worker is polling task queue "${queue}"`);
      expect(other.stderr).toContain(`It runs on that queue for good: start a worker with DH_TASK_QUEUE=${queue}`);

      // A follower that stays (attach --follow) sees the warning too, and then the worker arrive.
      const attach = spawnDh(['attach', sessionId, '--follow'], stack.env);
      try {
        await attach.waitFor(/warning: no worker is polling task queue/, 30_000);
        const worker = await startDhWorker(stack.env);
        try {
          await attach.waitFor(
            new RegExp(`a worker now polls task queue "${queue}"; session ${sessionId} goes on`),
            60_000,
          );
          const result = await run.result;
          expect(result.code, show(result)).toBe(0);
          expect(result.stdout).toContain('done, once a worker came');
          // With a worker polling, a message says nothing about workers.
          const polled = await dh(['steer', sessionId, 'and now?'], stack.env);
          expect(polled.code, show(polled)).toBe(0);
          expect(polled.stderr).not.toContain('no worker is polling');
        } finally {
          await worker.stop();
        }
      } finally {
        await attach.stop();
      }
    } finally {
      await run.stop();
    }
  }, 180_000);

  it('dh chat shows the warning on screen once its first message started the session', async () => {
    const env = { ...stack.env, DH_TASK_QUEUE: `chat-unpolled-${process.pid}-${Date.now()}` };
    const terminal = startPty(process.execPath, [DH_BIN, 'chat'], { cols: 400, rows: 30, env, cwd: stack.home });
    try {
      await terminal.waitFor(/new session \S+:/, { timeoutMs: 60_000 });
      terminal.write('hello?');
      terminal.write(KEYS.ENTER);
      const screen = await terminal.waitFor(/no worker is polling task queue/, { timeoutMs: 30_000 });
      expect(screen.text).toContain(`"${env.DH_TASK_QUEUE}"`);
      expect(screen.text).toContain('DH_TASK_QUEUE');
    } finally {
      terminal.kill('SIGKILL');
    }
  }, 120_000);
});
