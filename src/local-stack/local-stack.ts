// The embedded local stack under DH_HOME: a Temporal dev server with a persistent db file and a
// background worker process, started on first use and reused afterwards (pids and ports in stack.json).
// With TEMPORAL_ADDRESS set, the configured cluster is used instead and no local process is started.
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import type { WorkerConfig } from '../config/worker-config.js';
import { isOurProcess, stopGroup } from './stack-processes.js';
import { acquireLock, readRecord, stackPaths, writeRecord } from './stack-record.js';
import { answers, ensureTemporal, hasPollers } from './stack-temporal.js';
import { ensureWorker } from './stack-worker.js';

export { LocalStackErrorCode } from './local-stack-error.js';
export { stackPaths } from './stack-record.js';
export { DEFAULT_TEMPORAL_PORT, registerSearchAttributes } from './stack-temporal.js';
export { WORKER_READY_FILE_ENV } from './stack-worker.js';

export interface LocalStack {
  readonly address: string;
  readonly namespace: string;
  readonly uiAddress: string | null;
  readonly taskQueue: string;
}

export interface EnsureLocalStackOptions {
  /** Start (or reuse) the background worker too (default true). */
  readonly startWorker?: boolean;
  /** Progress lines (default: none); a slow start says every 10 s that it is still waiting. */
  readonly log?: (line: string) => void;
  /** Called with the new Temporal server's pid right after it is spawned (tests pause it to make a slow start). */
  readonly onTemporalSpawn?: (pid: number) => void;
}

export interface LocalStackStatus {
  readonly temporal: 'running' | 'stopped' | 'external';
  readonly worker: 'running' | 'stopped';
  readonly address: string | null;
  readonly uiAddress: string | null;
  readonly home: string;
}

/** True when TEMPORAL_ADDRESS names a cluster: no local processes then. */
export function isExternalTemporal(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.TEMPORAL_ADDRESS ?? '').trim() !== '';
}

/**
 * With TEMPORAL_ADDRESS set: that cluster (no local processes). Otherwise: reuse or start the embedded
 * stack under DH_HOME (Temporal dev server with a persistent db file + a background worker process),
 * and return its addresses.
 */
export async function ensureLocalStack(
  config: WorkerConfig,
  options: EnsureLocalStackOptions = {},
): Promise<LocalStack> {
  if (isExternalTemporal()) {
    return {
      address: config.temporalAddress,
      namespace: config.namespace,
      uiAddress: process.env.TEMPORAL_UI_ADDRESS?.trim() || null,
      taskQueue: config.taskQueue,
    };
  }
  const log = options.log ?? (() => undefined);
  const paths = stackPaths(config.home);
  await mkdir(paths.logs, { recursive: true });
  const release = await acquireLock(paths.lock, log);
  try {
    const record = await readRecord(paths.record);
    const temporal = await ensureTemporal(config, record, paths, log, options.onTemporalSpawn);
    record.temporal = temporal;
    await writeRecord(paths.record, record);
    if (options.startWorker ?? true) {
      record.worker = await ensureWorker(config, temporal, record.worker, paths, log);
      await writeRecord(paths.record, record);
    }
    return {
      address: temporal.address,
      namespace: temporal.namespace,
      uiAddress: temporal.uiAddress,
      taskQueue: config.taskQueue,
    };
  } finally {
    await release();
  }
}

/** Stops the embedded stack's processes recorded under DH_HOME (worker first); the db file stays. */
export async function stopLocalStack(config: WorkerConfig): Promise<{ stopped: string[] }> {
  const paths = stackPaths(config.home);
  if (!existsSync(paths.record)) return { stopped: [] };
  const release = await acquireLock(paths.lock, () => undefined);
  try {
    const record = await readRecord(paths.record);
    const stopped: string[] = [];
    if (record.worker && isOurProcess(record.worker.pid, 'worker')) {
      await stopGroup(record.worker.pid);
      stopped.push(`worker (pid ${record.worker.pid})`);
    }
    delete record.worker;
    if (record.temporal && isOurProcess(record.temporal.pid, 'temporal')) {
      await stopGroup(record.temporal.pid);
      stopped.push(`temporal (pid ${record.temporal.pid}, ${record.temporal.address})`);
    }
    delete record.temporal;
    await writeRecord(paths.record, record);
    await rm(paths.workerReady, { force: true });
    return { stopped };
  } finally {
    await release();
  }
}

export async function localStackStatus(config: WorkerConfig): Promise<LocalStackStatus> {
  const paths = stackPaths(config.home);
  const record = existsSync(paths.record) ? await readRecord(paths.record) : {};
  const worker = record.worker && isOurProcess(record.worker.pid, 'worker') ? 'running' : 'stopped';
  if (isExternalTemporal()) {
    // No local processes: "running" means some worker polls the session task queue.
    const polled = await hasPollers(config.temporalAddress, config.namespace, config.taskQueue);
    return {
      temporal: 'external',
      worker: polled ? 'running' : 'stopped',
      address: config.temporalAddress,
      uiAddress: process.env.TEMPORAL_UI_ADDRESS?.trim() || null,
      home: config.home,
    };
  }
  const t = record.temporal;
  const running = t !== undefined && isOurProcess(t.pid, 'temporal') && (await answers(t.address, t.namespace));
  return {
    temporal: running ? 'running' : 'stopped',
    worker,
    address: running ? t.address : null,
    uiAddress: running ? t.uiAddress : null,
    home: config.home,
  };
}
