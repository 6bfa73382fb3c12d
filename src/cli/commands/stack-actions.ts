// What `dh up`, `dh down` and `dh status` do; stack-commands.ts defines them and loads this module when
// one of them runs (`dh worker` is worker-action.ts).
import {
  ensureLocalStack,
  isExternalTemporal,
  localStackStatus,
  stackPaths,
  stopLocalStack,
} from '../../local-stack/local-stack.js';
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

function print(json: boolean | undefined, data: unknown, lines: readonly string[]): void {
  process.stdout.write(json ? `${JSON.stringify(data, null, 2)}\n` : `${lines.join('\n')}\n`);
}
