// Builds the Temporal worker that runs session workflows and activities for one task queue.
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createSessionActivities } from '../activities/session-activities.js';
import type { SessionRuntime } from '../activities/session-runtime.js';

export const DEFAULT_TASK_QUEUE = 'dh-sessions';

export interface SessionWorkerOptions {
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly runtime: SessionRuntime;
  /** A prebuilt workflow bundle (see bundleSessionWorkflows); bundled from source when absent. */
  readonly workflowBundlePath?: string;
  /** Parallel model/tool activities on this worker. */
  readonly maxConcurrentActivities?: number;
}

export interface SessionWorker {
  readonly worker: Worker;
  readonly connection: NativeConnection;
  /** Runs until `shutdown()` (or a signal); resolves when the worker has drained. */
  run(): Promise<void>;
  shutdown(): Promise<void>;
}

export async function createSessionWorker(options: SessionWorkerOptions): Promise<SessionWorker> {
  const connection = await NativeConnection.connect({ address: options.address });
  const worker = await Worker.create({
    connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities: createSessionActivities(options.runtime),
    ...(options.workflowBundlePath
      ? { workflowBundle: { codePath: options.workflowBundlePath } }
      : { workflowsPath: fileURLToPath(new URL('../workflows/index.ts', import.meta.url)) }),
    maxConcurrentActivityTaskExecutions: options.maxConcurrentActivities ?? 100,
    // Heartbeats carry cancellation: flush them every second so an interrupt lands within about a
    // second instead of 80% of the heartbeat timeout.
    maxHeartbeatThrottleInterval: '1 second',
    defaultHeartbeatThrottleInterval: '1 second',
  });
  return {
    worker,
    connection,
    run: async () => {
      try {
        await worker.run();
      } finally {
        await connection.close();
      }
    },
    shutdown: async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await Promise.resolve();
    },
  };
}
