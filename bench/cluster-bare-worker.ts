// Child-process entry of the cluster bench's baseline: one bare worker (bench/bare's workflow and no-op
// activities) on a given task queue, configured by JSON in DH_BENCH_BARE_WORKER_CONFIG (cluster-processes.ts).
// Prints its ready line once both workers exist; SIGTERM, SIGINT or EOF on stdin drain it and exit.
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createBareActivities } from './bare/activities.js';
import { BARE_CONFIG_ENV, BARE_READY_LINE, type BareProcessConfig } from './cluster-processes.js';

const config = JSON.parse(process.env[BARE_CONFIG_ENV] ?? '{}') as Partial<BareProcessConfig>;
const { address, namespace, taskQueue, bundlePath } = config;
if (address === undefined || namespace === undefined || taskQueue === undefined || bundlePath === undefined) {
  throw new Error(`cluster-bare-worker: ${BARE_CONFIG_ENV} must hold address, namespace, taskQueue and bundlePath`);
}

Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
const connection = await NativeConnection.connect({ address });
// The activities only note their start times; the arrays are cleared so a long run does not grow them.
const starts = { model: [] as number[], tool: [] as number[] };
const workers = await Promise.all([
  Worker.create({ connection, namespace, taskQueue, workflowBundle: { codePath: bundlePath } }),
  Worker.create({
    connection,
    namespace,
    taskQueue: `${taskQueue}-activities`,
    activities: createBareActivities(starts),
  }),
]);
const trim = setInterval(() => {
  starts.model.length = 0;
  starts.tool.length = 0;
}, 1_000);
const running = Promise.all(workers.map((w) => w.run()));
let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  clearInterval(trim);
  for (const w of workers) w.shutdown();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
process.stdout.write(`${BARE_READY_LINE}\n`);

let exitCode = 0;
try {
  await running;
} catch (error) {
  console.error(`cluster-bare-worker: ${error instanceof Error ? error.stack : String(error)}`);
  exitCode = 1;
}
await connection.close();
process.exit(exitCode);
