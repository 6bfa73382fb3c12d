// The worker of a test harness, either in the test's own process (`startWorker({ agents, config })`: quick, and
// the agents are the test's objects) or as a `dh worker --agents <module>` child in its own process group, which
// a test can SIGKILL mid-tool and start again on the same host id, queue and store, as a crash would leave them.
import { readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Agent } from '../agents/define-agent.js';
import { readWorkerConfig } from '../config/worker-config.js';
import { DhError } from '../core/errors.js';
import { signalGroup } from '../local-stack/signal-group.js';
import { readLogTail, spawnDetached, waitUntilReady, type DetachedChild } from '../local-stack/spawn-detached.js';
import { WORKER_READY_FILE_ENV } from '../local-stack/stack-worker.js';
import { DEFAULT_START_CEILING_MS } from '../local-stack/wait-while-alive.js';
import { createLogger } from '../observability/logger.js';
import { startWorker } from '../worker/start-worker.js';

export const TestHarnessErrorCode = {
  /** `kill()` of an in-process worker: only a child process can be killed as a crash would. */
  NotAChild: 'TEST_WORKER_NOT_A_CHILD',
  /** The child worker exited before it was ready, or was not ready in time. */
  WorkerStart: 'TEST_WORKER_START',
  /** `waitForLog` gave up. */
  Timeout: 'TEST_HARNESS_TIMEOUT',
} as const;

export interface TestWorker {
  /** `child`: a `dh worker` process; `in-process`: a worker in the test's process. */
  readonly mode: 'in-process' | 'child';
  /** The running child's pid (null in-process, or while stopped). */
  readonly pid: number | null;
  /** The child's stdout and stderr (null in-process: its lines go to the test's stderr). */
  readonly logFile: string | null;
  /** SIGKILL to the child's process group: it dies at once, mid-step, as in a crash. Child mode only. */
  kill(): Promise<void>;
  /** Starts it again (after `kill` or `stop`) on the same host id, task queue and store. */
  restart(): Promise<void>;
  /** Stops it: in-process it drains; a child gets SIGTERM, then SIGKILL after 15 s. */
  stop(): Promise<void>;
}

/** `startWorker({ agents, config })` in this process, configured by `env` as `dh worker` would be. */
export async function startInProcessWorker(
  agents: readonly Agent[],
  env: NodeJS.ProcessEnv,
  defaultAgent?: string,
): Promise<TestWorker> {
  const start = async () => {
    const worker = await startWorker({
      ...(agents.length > 0 ? { agents } : {}),
      ...(defaultAgent !== undefined ? { defaultAgent } : {}),
      config: readWorkerConfig(env),
      // Its start-up lines and the Temporal SDK's (worker states) only when something is wrong.
      log: createLogger({ level: 'warn' }).child({ component: 'test-worker' }),
    });
    // Held, not thrown at once: a worker that fails while the test runs fails its stop (no unhandled rejection).
    const failures: unknown[] = [];
    const running = worker.run().catch((error: unknown) => {
      failures.push(error);
    });
    return {
      stop: async () => {
        await worker.shutdown();
        await running;
        await worker.close();
        if (failures.length > 0) throw failures[0];
      },
    };
  };
  let current: { stop(): Promise<void> } | null = await start();
  return {
    mode: 'in-process',
    pid: null,
    logFile: null,
    kill: () =>
      Promise.reject(
        new DhError(
          TestHarnessErrorCode.NotAChild,
          'worker.kill() needs a child worker: startTestHarness({ worker: { module } }) runs `dh worker --agents <module>`',
        ),
      ),
    restart: async () => {
      await current?.stop();
      current = null;
      current = await start();
    },
    stop: async () => {
      const stopping = current;
      current = null;
      await stopping?.stop();
    },
  };
}

/** Where `dh` is: bin/dh.mjs of this package (the sources' or the installed one's). */
function dhBin(): string {
  return join(dirname(createRequire(import.meta.url).resolve('durable-harness/package.json')), 'bin', 'dh.mjs');
}

/** `dh worker --agents <module>` in its own process group, ready once it has written its pid to the ready file. */
export async function startChildWorker(
  module: string,
  env: NodeJS.ProcessEnv,
  dir: string,
  defaultAgent?: string,
): Promise<TestWorker> {
  const logFile = join(dir, 'worker.log');
  const readyFile = join(dir, 'worker.ready');
  const bin = dhBin();
  let child: DetachedChild | null = null;
  // A test process that ends without close() leaves no worker behind.
  const killOnExit = () => {
    if (child !== null && child.exit === null) signalGroup(child.pid, 'SIGKILL');
  };
  process.on('exit', killOnExit);

  const start = async () => {
    await rm(readyFile, { force: true });
    const args = [
      bin,
      'worker',
      '--agents',
      module,
      ...(defaultAgent !== undefined ? ['--default-agent', defaultAgent] : []),
    ];
    const started = await spawnDetached(process.execPath, args, {
      env: { ...env, [WORKER_READY_FILE_ENV]: readyFile },
      logFile,
      // The test waits for this child whenever it stops or kills it.
      unref: false,
    });
    if (started === undefined) {
      throw new DhError(TestHarnessErrorCode.WorkerStart, `could not run ${process.execPath} ${bin} worker`);
    }
    child = started;
    const failed = async (why: string) =>
      new DhError(
        TestHarnessErrorCode.WorkerStart,
        `the test worker (dh worker --agents ${module}) ${why}; ${logFile}:\n${(await readLogTail(logFile, started.logStart)).trim()}`,
        { logFile },
      );
    await waitUntilReady(started, {
      isReady: async () => (await readFile(readyFile, 'utf8').catch(() => '')).trim() === String(started.pid),
      timeoutMs: DEFAULT_START_CEILING_MS,
      pollMs: 100,
      onExit: (how) => failed(`exited (${how}) before it was ready`),
      onTimeout: async () => {
        signalGroup(started.pid, 'SIGKILL');
        return failed(`was not ready within ${DEFAULT_START_CEILING_MS / 1000} s, so it was killed`);
      },
    });
  };
  const stopChild = async (signal: NodeJS.Signals) => {
    const running = child;
    child = null;
    if (running === null || running.exit !== null) return;
    signalGroup(running.pid, signal);
    if (signal === 'SIGKILL') {
      await running.exited;
      return;
    }
    const timer = setTimeout(() => signalGroup(running.pid, 'SIGKILL'), 15_000);
    await running.exited;
    clearTimeout(timer);
  };

  await start();
  return {
    mode: 'child',
    get pid() {
      return child?.pid ?? null;
    },
    logFile,
    kill: () => stopChild('SIGKILL'),
    restart: async () => {
      await stopChild('SIGTERM');
      await start();
    },
    stop: async () => {
      await stopChild('SIGTERM');
      process.off('exit', killOnExit);
    },
  };
}
