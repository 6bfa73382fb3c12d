// Session workers in child processes, for crash tests: each runs test/helpers/worker-process.ts in its
// own process group, so a test can arm failpoints in it, see it die by SIGKILL, and start a fresh one.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { signalGroup } from '../../src/local-stack/signal-group.js';
import type { Failpoint } from '../../src/activities/failpoints.js';

/** What a child worker needs to build the same runtime as the in-process harness. */
export interface WorkerProcessConfig {
  /** host:port of the Temporal frontend. */
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly workflowBundlePath: string;
  /** SQLite file of the session store (the test may open the same file to read the log). */
  readonly storePath: string;
  /** The scripted provider's base URL (with `/v1`). */
  readonly providerBaseURL: string;
  /** The run log of the sleep tools (one line per run, the call id). */
  readonly runLog: string;
  /** The idle watchdog of model streams, in milliseconds. */
  readonly idleTimeoutMs: number;
  /** How often long activities heartbeat; 500 ms (the harness's value) when absent. */
  readonly heartbeatMs?: number;
  /** The Temporal SDK's log level in the child (its logs go to stderr); WARN when absent. */
  readonly logLevel?: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /** Names the worker's tool queue (workers sharing a session's tools share it); the hostname when absent. */
  readonly hostId?: string;
  /** A `postgres://` URL (or several: a sharded store): the session store instead of the SQLite file at `storePath`. */
  readonly storeUrl?: string;
  /** With the `continue-as-new` failpoint armed: how long after a `turn/end` append the worker dies (default 20 ms). */
  readonly continueAsNewKillDelayMs?: number;
  /** The SDK's workflow cache size (`DH_WORKFLOW_CACHE_MAX` of `dh worker`); the SDK's default when absent. */
  readonly maxCachedWorkflows?: number;
  /** Offers the `delegate` tool with this depth limit (what DH_SUBAGENT_DEPTH does for `dh worker`); none when absent or 0. */
  readonly subagentDepth?: number;
  /** The fleet limiter's quota for the provider account (what DH_RATE_LIMIT_* do); no limiter when absent. */
  readonly fleetQuota?: { requestsPerMinute?: number; tokensPerMinute?: number; maxConcurrent?: number };
  /** Concurrent model steps on this worker (DH_MODEL_CONCURRENCY); 16 when absent. */
  readonly modelConcurrency?: number;
  /** Publishes streamed output, progress and usage to the store's delta channel, as `dh worker` does. */
  readonly liveStream?: boolean;
  /** The tenant this worker's sessions belong to (DH_TENANT): its quota in `tenants` is drawn on too. */
  readonly tenant?: string;
  /** A tool policy file (what DH_POLICY names for `dh worker`), read when the worker starts. */
  readonly policyFile?: string;
  /** Tenants' own quotas, given to the fleet limiter (DH_LIMITS' `tenants`); used only with `fleetQuota`. */
  readonly tenants?: Record<string, { requestsPerMinute?: number; tokensPerMinute?: number }>;
}

export interface ChildWorkerOptions {
  /** Failpoints armed in the child (DH_FAILPOINTS); none when absent. */
  readonly failpoints?: readonly Failpoint[];
  /** Where an armed failpoint logs its hit (DH_FAILPOINT_LOG); required to see which one fired. */
  readonly failpointLog?: string;
  /** How long to wait for `worker ready`; 60 s when absent. */
  readonly readyTimeoutMs?: number;
}

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface ChildWorker {
  readonly pid: number;
  /** Settles when the child has exited (never rejects). */
  readonly exited: Promise<ChildExit>;
  /** Sends `signal` to the child's process group (a no-op once it has exited). */
  kill(signal: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs` (10 s); resolves once it has exited. */
  stop(graceMs?: number): Promise<ChildExit>;
  /** The last lines the child wrote to stderr and stdout (for failure messages). */
  output(): string;
}

/** The env var carrying the JSON config to worker-process.ts. */
export const WORKER_CONFIG_ENV = 'DH_WORKER_PROCESS_CONFIG';
/** The stdout line worker-process.ts prints once `Worker.create` succeeded. */
export const WORKER_READY_LINE = 'worker ready';

const ENTRY = fileURLToPath(new URL('./worker-process.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TAIL_CHARS = 4_000;

/** Children not yet seen to exit: killed when this process exits, so none outlives a failed run. */
const live = new Set<number>();
process.once('exit', () => {
  for (const pid of live) signalGroup(pid, 'SIGKILL');
});

export async function startChildWorker(
  config: WorkerProcessConfig,
  options: ChildWorkerOptions = {},
): Promise<ChildWorker> {
  const env: NodeJS.ProcessEnv = { ...process.env, [WORKER_CONFIG_ENV]: JSON.stringify(config) };
  delete env.DH_FAILPOINTS;
  delete env.DH_FAILPOINT_LOG;
  if (options.failpoints && options.failpoints.length > 0) env.DH_FAILPOINTS = options.failpoints.join(',');
  if (options.failpointLog !== undefined) env.DH_FAILPOINT_LOG = options.failpointLog;

  // `node --import tsx`, not `npx tsx`: one process, so a failpoint's SIGKILL is the exit we observe.
  // stdin stays a pipe the child watches: if this process dies, the child sees EOF and exits.
  const child = spawn(process.execPath, ['--import', 'tsx', ENTRY], {
    cwd: REPO_ROOT,
    env,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const pid = child.pid;
  if (pid === undefined) {
    const error = await new Promise<unknown>((resolve) => child.once('error', resolve));
    throw new Error(`could not spawn the worker process: ${String(error)}`);
  }
  live.add(pid);

  let stdout = '';
  let stderr = '';
  const keep = (text: string) => (text.length > TAIL_CHARS ? text.slice(-TAIL_CHARS) : text);
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout = keep(stdout + chunk)));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = keep(stderr + chunk)));
  const output = () => `--- stderr (tail) ---\n${stderr}\n--- stdout (tail) ---\n${stdout}`;

  let exit: ChildExit | null = null;
  const exited = new Promise<ChildExit>((resolve) => {
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      live.delete(pid);
      resolve(exit);
    });
  });
  const kill = (signal: NodeJS.Signals) => {
    if (exit === null) signalGroup(pid, signal);
  };
  // A parent that outlives the child must not crash on the closed pipe.
  child.stdin.on('error', () => {});

  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  try {
    await new Promise<void>((resolve, reject) => {
      const onData = () => {
        if (stdout.split('\n').includes(WORKER_READY_LINE)) done(null);
      };
      const onExit = ({ code, signal }: ChildExit) =>
        done(new Error(`the worker process exited (code ${code}, signal ${signal}) before it was ready`));
      const timer = setTimeout(
        () => done(new Error(`the worker process was not ready within ${readyTimeoutMs} ms`)),
        readyTimeoutMs,
      );
      const done = (error: Error | null) => {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        if (error) reject(error);
        else resolve();
      };
      child.stdout.on('data', onData);
      void exited.then(onExit);
      onData();
    });
  } catch (error) {
    kill('SIGKILL');
    await exited;
    throw new Error(`${(error as Error).message}\n${output()}`, { cause: error });
  }

  return {
    pid,
    exited,
    kill,
    output,
    stop: async (graceMs = 10_000) => {
      kill('SIGTERM');
      const timer = setTimeout(() => kill('SIGKILL'), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
