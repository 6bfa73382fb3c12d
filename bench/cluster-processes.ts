// The cluster bench's processes: bare baseline workers in child processes (cluster-bare-worker.ts), and CPU
// time read from /proc — of one process, and of a PostgreSQL server (postmaster, live and reaped backends).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { signalGroup } from '../src/local-stack/signal-group.js';

export interface BareProcessConfig {
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
  /** The bare workflow bundle, written once by the bench (no webpack per process). */
  readonly bundlePath: string;
}

export const BARE_CONFIG_ENV = 'DH_BENCH_BARE_WORKER_CONFIG';
export const BARE_READY_LINE = 'bare worker ready';

export interface BareProcess {
  readonly pid: number;
  stop(): Promise<void>;
}

const ENTRY = fileURLToPath(new URL('./cluster-bare-worker.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const live = new Set<number>();
process.once('exit', () => {
  for (const pid of live) signalGroup(pid, 'SIGKILL');
});

export async function startBareProcess(config: BareProcessConfig, readyTimeoutMs = 60_000): Promise<BareProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', ENTRY], {
    cwd: REPO_ROOT,
    env: { ...process.env, [BARE_CONFIG_ENV]: JSON.stringify(config) },
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not spawn the bare worker process');
  live.add(pid);
  let output = '';
  const keep = (chunk: string) => (output = (output + chunk).slice(-4_000));
  child.stdout.setEncoding('utf8').on('data', keep);
  child.stderr.setEncoding('utf8').on('data', keep);
  child.stdin.on('error', () => {});
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      live.delete(pid);
      resolve();
    }),
  );
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => fail('was not ready in time'), readyTimeoutMs);
    const onData = () => {
      if (output.split('\n').includes(BARE_READY_LINE)) finish();
    };
    const finish = () => {
      clearTimeout(timer);
      child.stdout.off('data', onData);
      resolve();
    };
    const fail = (why: string) => {
      clearTimeout(timer);
      signalGroup(pid, 'SIGKILL');
      reject(new Error(`the bare worker process ${why}:\n${output}`));
    };
    child.stdout.on('data', onData);
    void exited.then(() => fail('exited before it was ready'));
  });
  return {
    pid,
    stop: async () => {
      signalGroup(pid, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Fields of /proc/<pid>/stat after the command name: [0] state, [1] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** CPU time (user + system) of one process so far, in ms (clock ticks of 10 ms); 0 once it is gone. */
export function cpuMs(pid: number): number {
  const f = statFields(pid);
  return f ? (Number(f[11]) + Number(f[12])) * 10 : 0;
}

/**
 * CPU time of a PostgreSQL server so far, in ms: the postmaster, its live children (backends, background
 * workers) and the children it has reaped (its cutime and cstime), so short-lived connections count too.
 */
export function postgresCpuMs(postmasterPid: number): number {
  const own = statFields(postmasterPid);
  if (!own) return Number.NaN;
  let total = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(Number(entry));
    if (f && Number(f[1]) === postmasterPid) total += Number(f[11]) + Number(f[12]);
  }
  return total * 10;
}

/** The postmaster of the backend serving `backendPid` (its parent), or null off this machine. */
export function postmasterOf(backendPid: number): number | null {
  const f = statFields(backendPid);
  return f ? Number(f[1]) : null;
}
