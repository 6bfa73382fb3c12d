// The local stack's worker process: `dh worker` started detached against the stack's Temporal server,
// reused while its configuration is unchanged, and ready once it has written its pid to the ready file
// (waited for while it is alive, with progress lines, up to a ceiling).
import { existsSync, statSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkerConfig } from '../config/worker-config.js';
import { DhError } from '../core/index.js';
import { LocalStackErrorCode } from './local-stack-error.js';
import { readLogTail, spawnDetached, waitUntilReady } from './spawn-detached.js';
import { isOurProcess, stopGroup } from './stack-processes.js';
import type { StackPaths, TemporalRecord, WorkerRecord } from './stack-record.js';
import { DEFAULT_START_CEILING_MS, formatSeconds } from './wait-while-alive.js';

/** The env var the background worker writes its pid to once its Temporal workers are created. */
export const WORKER_READY_FILE_ENV = 'DH_WORKER_READY_FILE';

/** Its first start may bundle the workflows, which is slow on a loaded machine: the same ceiling as Temporal's. */
const WORKER_READY_MS = DEFAULT_START_CEILING_MS;
const BIN = fileURLToPath(new URL('../../bin/dh.mjs', import.meta.url));

/** The configuration a running worker must have been started with to be reused. */
function workerFingerprint(config: WorkerConfig, temporal: TemporalRecord): string {
  return JSON.stringify({
    address: temporal.address,
    namespace: temporal.namespace,
    taskQueue: config.taskQueue,
    store: config.store,
    provider: config.provider,
    baseURL: config.baseURL ?? null,
    model: config.model,
    apiKeyEnv: config.apiKeyEnv ?? null,
    thinking: config.thinking ?? null,
    // Only when set, so the fingerprint of a worker started without them stays what it was.
    ...(config.contextWindow !== undefined ? { contextWindow: config.contextWindow } : {}),
    ...(config.maxTokens !== undefined ? { maxTokens: config.maxTokens } : {}),
    ...(config.temperature !== undefined ? { temperature: config.temperature } : {}),
    ...(config.stream === false ? { stream: false } : {}),
    ...(config.extraBody !== undefined ? { extraBody: config.extraBody } : {}),
    systemPrompt: config.systemPrompt,
    workflowBundlePath: config.workflowBundlePath ?? null,
    shellSandbox: config.shellSandbox,
    approvalAsk: config.approvalAsk,
    approvalDeny: config.approvalDeny,
    // Workers publish their agents since format 2 (an older one never would), and serve DH_AGENTS as last changed.
    agents: agentsModuleStamp(process.env.DH_AGENTS),
  });
}

/** The agents module the worker serves and when it last changed; `default` without one. */
function agentsModuleStamp(module: string | undefined): string {
  if (module === undefined || module === '') return 'default';
  const file = resolve(module);
  return `${file}@${existsSync(file) ? statSync(file).mtimeMs : 'missing'}`;
}

/** The recorded worker while its configuration is unchanged, else a new one (started and waited for). */
export async function ensureWorker(
  config: WorkerConfig,
  temporal: TemporalRecord,
  previous: WorkerRecord | undefined,
  paths: StackPaths,
  log: (line: string) => void,
): Promise<WorkerRecord> {
  const fingerprint = workerFingerprint(config, temporal);
  if (previous && isOurProcess(previous.pid, 'worker')) {
    if (previous.fingerprint === fingerprint) return previous;
    log(`the worker configuration changed: restarting the background worker (pid ${previous.pid})`);
    await stopGroup(previous.pid);
  }
  await rm(paths.workerReady, { force: true });
  log(`starting the background worker on task queue ${config.taskQueue} (log ${paths.workerLog})`);
  const child = await spawnDetached(process.execPath, [BIN, 'worker'], {
    env: {
      ...process.env,
      DH_HOME: config.home,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: temporal.namespace,
      DH_TASK_QUEUE: config.taskQueue,
      DH_STORE: config.store,
      [WORKER_READY_FILE_ENV]: paths.workerReady,
    },
    logFile: paths.workerLog,
  });
  if (child === undefined) throw new DhError(LocalStackErrorCode.StartFailed, 'could not start the background worker');
  const pid = child.pid;
  await waitUntilReady(child, {
    isReady: async () => (await readFile(paths.workerReady, 'utf8').catch(() => '')).trim() === String(pid),
    timeoutMs: WORKER_READY_MS,
    pollMs: 200,
    progress: { what: `the background worker on task queue ${config.taskQueue}`, log },
    onExit: async (how) => {
      const tail = await readLogTail(paths.workerLog, child.logStart);
      return new DhError(
        LocalStackErrorCode.StartFailed,
        `the background worker exited (${how}) before it was ready; see ${paths.workerLog}:\n${tail.trim()}`,
      );
    },
    onTimeout: async () => {
      await stopGroup(pid);
      return new DhError(
        LocalStackErrorCode.StartFailed,
        `the background worker (pid ${pid}) was still running but not ready within ` +
          `${formatSeconds(WORKER_READY_MS)} s, so it was stopped; see ${paths.workerLog}`,
      );
    },
  });
  return {
    pid,
    taskQueue: config.taskQueue,
    fingerprint,
    logFile: paths.workerLog,
    startedAt: new Date().toISOString(),
  };
}
