// What `dh up`, `dh down`, `dh status` and `dh worker` do; stack-commands.ts defines them and loads this
// module when one of them runs.
import { writeFileSync } from 'node:fs';
import type { LogEntry } from '@temporalio/worker';
import {
  ensureLocalStack,
  isExternalTemporal,
  localStackStatus,
  stackPaths,
  stopLocalStack,
  WORKER_READY_FILE_ENV,
} from '../../local-stack/local-stack.js';
import { createLogger, type Logger } from '../../observability/logger.js';
import { assertProviderReady, loadCliConfig } from '../cli-context.js';
import { cliAction } from '../cli-action.js';

export const upCommand = cliAction(async (options: { worker: boolean; json?: boolean }) => {
  const config = loadCliConfig();
  if (isExternalTemporal()) {
    print(options.json, { temporal: 'external', address: config.temporalAddress }, [
      `TEMPORAL_ADDRESS is set: using ${config.temporalAddress} (namespace ${config.namespace}); nothing to start.`,
      'Run a worker for it with `dh worker`.',
    ]);
    return;
  }
  if (options.worker) await assertProviderReady(config);
  const stack = await ensureLocalStack(config, {
    startWorker: options.worker,
    log: (line) => void process.stderr.write(`dh: ${line}\n`),
  });
  const status = await localStackStatus(config);
  const paths = stackPaths(config.home);
  print(options.json, { ...status, taskQueue: stack.taskQueue, store: config.store }, [
    `temporal  ${stack.address}  (namespace ${stack.namespace}, db ${paths.dbFile})`,
    `ui        ${stack.uiAddress !== null ? `http://${stack.uiAddress}` : 'off'}`,
    `worker    ${status.worker}  (task queue ${stack.taskQueue}, log ${paths.workerLog})`,
    `store     ${config.store}`,
  ]);
});

export const downCommand = cliAction(async (options: { json?: boolean }) => {
  const { stopped } = await stopLocalStack(loadCliConfig());
  print(options.json, { stopped }, stopped.length > 0 ? stopped.map((s) => `stopped ${s}`) : ['nothing was running']);
});

export const statusCommand = cliAction(async (options: { json?: boolean }) => {
  const config = loadCliConfig();
  const status = await localStackStatus(config);
  print(options.json, { ...status, taskQueue: config.taskQueue, store: config.store }, [
    `temporal  ${status.temporal}${status.address !== null ? `  ${status.address}` : ''}`,
    `ui        ${status.uiAddress !== null ? `http://${status.uiAddress}` : '-'}`,
    `worker    ${status.worker}  (task queue ${config.taskQueue})`,
    `store     ${config.store}`,
    `home      ${status.home}`,
  ]);
});

export const workerCommand = cliAction(async () => {
  let config = loadCliConfig();
  await assertProviderReady(config);
  const logger = createLogger().child({ component: 'worker', pid: process.pid });
  if (!isExternalTemporal()) {
    const stack = await ensureLocalStack(config, {
      startWorker: false,
      log: (line) => logger.info(line),
    });
    config = { ...config, temporalAddress: stack.address, namespace: stack.namespace };
  }
  // Loaded here, not at startup: the worker's dependencies are heavy and only this command needs them.
  const { startWorker } = await import('../../../worker.js');
  await installTemporalLogger(logger);
  const worker = await startWorker(config);
  const stop = (): void => void worker.shutdown();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const readyFile = process.env[WORKER_READY_FILE_ENV];
  if (readyFile !== undefined && readyFile !== '') writeFileSync(readyFile, String(process.pid));
  logger.info('worker ready', {
    address: config.temporalAddress,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    provider: config.provider,
    model: config.model,
  });
  try {
    await worker.run();
  } finally {
    await worker.close();
    logger.info('worker stopped');
  }
});

function print(json: boolean | undefined, data: unknown, lines: readonly string[]): void {
  process.stdout.write(json ? `${JSON.stringify(data, null, 2)}\n` : `${lines.join('\n')}\n`);
}

/** The Temporal SDK's own logs (worker state, activity and workflow failures) as JSON lines too. */
async function installTemporalLogger(logger: Logger): Promise<void> {
  const { DefaultLogger, Runtime } = await import('@temporalio/worker');
  const level = logger.level === 'silent' ? 'ERROR' : logger.level === 'debug' ? 'DEBUG' : logger.level.toUpperCase();
  const log = (entry: LogEntry): void => {
    const fields: Record<string, string | number | boolean | null> = { source: 'temporal' };
    for (const [key, value] of Object.entries(entry.meta ?? {})) {
      if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') fields[key] = value;
    }
    const workflowId = fields.workflowId;
    if (typeof workflowId === 'string' && workflowId.startsWith('session-')) fields.sessionId = workflowId.slice(8);
    const at = entry.level === 'TRACE' ? 'debug' : (entry.level.toLowerCase() as 'debug' | 'info' | 'warn' | 'error');
    logger[at](entry.message, fields);
  };
  Runtime.install({ logger: new DefaultLogger(level as 'DEBUG' | 'INFO' | 'WARN' | 'ERROR', log) });
}
