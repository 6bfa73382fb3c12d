// What `dh worker` does: a session worker in the foreground, on TEMPORAL_ADDRESS or the local stack.
// stack-commands.ts loads this module only when the command runs: the worker's dependencies are heavy.
import { writeFileSync } from 'node:fs';
import { ensureLocalStack, isExternalTemporal, WORKER_READY_FILE_ENV } from '../../local-stack/local-stack.js';
import { createLogger } from '../../observability/logger.js';
import { installTemporalLogger } from '../../observability/temporal-logger.js';
import { startWorker } from '../../worker/start-worker.js';
import { loadAgentsModule } from '../../agents/load-agents-module.js';
import { cliAction } from '../cli-action.js';
import { assertProviderReady, loadCliConfig } from '../cli-context.js';

export const workerCommand = cliAction(async (options: { agents?: string; defaultAgent?: string } = {}) => {
  let config = loadCliConfig();
  // The user's module first: one that does not load fails before anything starts.
  const module = options.agents ?? nonEmpty(process.env.DH_AGENTS);
  const agents = module !== undefined ? await loadAgentsModule(module) : undefined;
  await assertProviderReady(config);
  const logger = createLogger().child({ component: 'worker', pid: process.pid });
  if (!isExternalTemporal()) {
    const stack = await ensureLocalStack(config, {
      startWorker: false,
      log: (line) => logger.info(line),
    });
    config = { ...config, temporalAddress: stack.address, namespace: stack.namespace };
  }
  await installTemporalLogger(logger);
  const worker = await startWorker({
    config,
    ...(agents ? { agents } : {}),
    ...(options.defaultAgent !== undefined ? { defaultAgent: options.defaultAgent } : {}),
  });
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
    agents: worker.agents
      .list()
      .map((a) => `${a.name}@${a.version}`)
      .join(', '),
  });
  try {
    await worker.run();
  } finally {
    await worker.close();
    logger.info('worker stopped');
  }
});

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value !== '' ? value : undefined;
}
