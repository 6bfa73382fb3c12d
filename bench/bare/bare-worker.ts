// Runs the bare baseline: its workflow bundled once with bundleWorkflowCode, a worker on its own task
// queue of a given server, and a client that runs `bareSession` workflows at some concurrency.
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Worker } from '@temporalio/worker';
import { createBareActivities } from './activities.js';
import { bareSession } from './workflows.js';

export interface BareWorker {
  readonly taskQueue: string;
  readonly client: Client;
  /** Workflow ids of the last `run`. */
  readonly lastIds: string[];
  /** performance.now() at each activity start since the last `reset`. */
  readonly starts: { model: number[]; tool: number[] };
  /** Runs `concurrency` workflows of `steps` steps each; resolves with the wall time in ms. */
  run(steps: number, concurrency: number): Promise<number>;
  reset(): void;
  stop(): Promise<void>;
}

let bundle: Promise<string> | undefined;

/** The bare workflow bundle (built once per process). */
export function bareWorkflowBundle(): Promise<string> {
  bundle ??= bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)),
    logger: new DefaultLogger('WARN'),
  }).then((b) => b.code);
  return bundle;
}

let counter = 0;

export async function startBareWorker(address: string, namespace: string): Promise<BareWorker> {
  const code = await bareWorkflowBundle();
  const starts = { model: [] as number[], tool: [] as number[] };
  const taskQueue = `bare-${process.pid}-${++counter}`;
  const nativeConnection = await NativeConnection.connect({ address });
  const workers = await Promise.all([
    Worker.create({ connection: nativeConnection, namespace, taskQueue, workflowBundle: { code } }),
    Worker.create({
      connection: nativeConnection,
      namespace,
      taskQueue: `${taskQueue}-activities`,
      activities: createBareActivities(starts),
    }),
  ]);
  const running = Promise.all(workers.map((w) => w.run()));
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  const lastIds: string[] = [];
  return {
    taskQueue,
    client,
    lastIds,
    starts,
    reset: () => {
      starts.model.length = 0;
      starts.tool.length = 0;
    },
    run: async (steps, concurrency) => {
      const begin = performance.now();
      const id = `${taskQueue}-${Date.now()}`;
      lastIds.length = 0;
      for (let i = 0; i < concurrency; i++) lastIds.push(`${id}-${i}`);
      await Promise.all(
        Array.from({ length: concurrency }, (_, i) =>
          client.workflow.execute(bareSession, { workflowId: `${id}-${i}`, taskQueue, args: [steps] }),
        ),
      );
      return performance.now() - begin;
    },
    stop: async () => {
      for (const w of workers) w.shutdown();
      await running;
      await connection.close();
      await nativeConnection.close();
    },
  };
}
