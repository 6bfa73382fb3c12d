// The demo's worker child: `dh worker` in its own process group on the demo's task queue, started (again
// after the crash), killed with SIGKILL mid-stream, and stopped; its output goes to the demo's log file.
import { mkdir, readFile, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { DhError } from '../../core/index.js';
import { WORKER_READY_FILE_ENV } from '../../local-stack/local-stack.js';
import { signalGroup } from '../../local-stack/signal-group.js';
import { spawnDetached, waitUntilReady, type DetachedChild } from '../../local-stack/spawn-detached.js';
import { DEFAULT_START_CEILING_MS } from '../../local-stack/wait-while-alive.js';

/** The code of every error the demo raises itself. */
export const DEMO_FAILED = 'DEMO_FAILED';

const BIN = fileURLToPath(new URL('../../../bin/dh.mjs', import.meta.url));
/** The ceiling of the worker's start (while it is alive the demo waits and says so every 10 s). */
const WORKER_READY_MS = DEFAULT_START_CEILING_MS;

export interface DemoWorkerOptions {
  /** The worker's whole environment (the ready file's variable is added per start). */
  readonly env: NodeJS.ProcessEnv;
  readonly readyFile: string;
  readonly logFile: string;
  readonly taskQueue: string;
  /** Progress lines. */
  readonly say: (line: string) => void;
}

export class DemoWorker {
  #child: DetachedChild | null = null;

  constructor(readonly options: DemoWorkerOptions) {}

  /** The running (or exited but not yet stopped) worker's pid. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Throws what became of the worker if it has exited on its own. */
  async assertAlive(): Promise<void> {
    const child = this.#child;
    if (child && child.exit !== null) throw await this.#died(child.exit);
  }

  async start(): Promise<void> {
    const { readyFile, logFile } = this.options;
    await mkdir(dirname(readyFile), { recursive: true });
    await rm(readyFile, { force: true });
    // Not unref'd: the demo waits for this child whenever it stops or kills it.
    const child = await spawnDetached(process.execPath, [BIN, 'worker'], {
      env: { ...this.options.env, [WORKER_READY_FILE_ENV]: readyFile },
      logFile,
      unref: false,
    });
    if (child === undefined) throw new DhError(DEMO_FAILED, 'could not start the demo worker');
    this.#child = child;
    await waitUntilReady(child, {
      isReady: async () => (await readFile(readyFile, 'utf8').catch(() => '')).trim() === String(child.pid),
      timeoutMs: WORKER_READY_MS,
      pollMs: 100,
      progress: { what: 'the demo worker', log: (line) => this.options.say(`   ${line}`) },
      onExit: (how) => this.#died(how),
      onTimeout: () =>
        Promise.resolve(
          new DhError(DEMO_FAILED, `the demo worker was not ready after ${WORKER_READY_MS / 1000} s; see ${logFile}`),
        ),
    });
    this.options.say(`   worker pid ${child.pid} ready on task queue ${this.options.taskQueue} (log ${logFile})`);
  }

  async kill(): Promise<void> {
    const child = this.#child;
    if (!child || child.exit !== null) return;
    signalGroup(child.pid, 'SIGKILL');
    await child.exited;
    this.#child = null;
  }

  async stop(): Promise<void> {
    const child = this.#child;
    if (!child || child.exit !== null) return;
    signalGroup(child.pid, 'SIGTERM');
    const stopped = await Promise.race([child.exited.then(() => true), sleep(15_000).then(() => false)]);
    if (!stopped) {
      signalGroup(child.pid, 'SIGKILL');
      await child.exited;
    }
    this.#child = null;
  }

  async #died(how: string): Promise<DhError> {
    const { logFile } = this.options;
    const tail = (await readFile(logFile, 'utf8').catch(() => '')).slice(-2_000);
    return new DhError(DEMO_FAILED, `the demo worker exited (${how}); ${logFile}:\n${tail.trim()}`);
  }
}
