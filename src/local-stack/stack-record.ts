// The stack record under DH_HOME: where the stack keeps its files, stack.json (the pids, addresses and
// configuration of the processes it started) and the lock held while starting or stopping them.
import { join } from 'node:path';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { DhError } from '../core/index.js';
import { LocalStackErrorCode } from './local-stack-error.js';
import { alive } from './stack-processes.js';

const LOCK_WAIT_MS = 10 * 60_000;

export interface TemporalRecord {
  readonly pid: number;
  readonly address: string;
  readonly uiAddress: string | null;
  readonly namespace: string;
  readonly dbFile: string;
  readonly cliPath: string;
  readonly startedAt: string;
}

export interface WorkerRecord {
  readonly pid: number;
  readonly taskQueue: string;
  /** The worker-relevant configuration it was started with; a different one restarts it. */
  readonly fingerprint: string;
  readonly logFile: string;
  readonly startedAt: string;
}

export interface StackRecord {
  temporal?: TemporalRecord;
  worker?: WorkerRecord;
}

export type StackPaths = ReturnType<typeof stackPaths>;

/** Where the stack keeps its files. */
export function stackPaths(home: string) {
  return {
    home,
    record: join(home, 'stack.json'),
    lock: join(home, 'stack.lock'),
    dbFile: join(home, 'temporal.db'),
    logs: join(home, 'logs'),
    temporalLog: join(home, 'logs', 'temporal.log'),
    workerLog: join(home, 'logs', 'worker.log'),
    workerReady: join(home, 'worker.ready'),
  };
}

export async function readRecord(path: string): Promise<StackRecord> {
  try {
    const parsed: unknown = JSON.parse(await readFile(path, 'utf8'));
    return typeof parsed === 'object' && parsed !== null ? parsed : {};
  } catch {
    return {};
  }
}

export async function writeRecord(path: string, record: StackRecord): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`);
  await rename(tmp, path);
}

/** An exclusive `mkdir` lock around starting and stopping; a lock whose owner died is taken over. */
export async function acquireLock(dir: string, log: (line: string) => void): Promise<() => Promise<void>> {
  const owner = join(dir, 'pid');
  const deadline = Date.now() + LOCK_WAIT_MS;
  let announced = false;
  for (;;) {
    try {
      await mkdir(dir);
      await writeFile(owner, String(process.pid));
      return () => rm(dir, { recursive: true, force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number(await readFile(owner, 'utf8').catch(() => 'NaN'));
    const age = await stat(dir).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if ((Number.isInteger(holder) && !alive(holder)) || (!Number.isInteger(holder) && age > 10_000)) {
      await rm(dir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new DhError(LocalStackErrorCode.Locked, `the local stack lock ${dir} is held by pid ${holder}`);
    }
    if (!announced) {
      log(`waiting for another dh process (pid ${holder}) that is starting or stopping the local stack`);
      announced = true;
    }
    await sleep(200);
  }
}
