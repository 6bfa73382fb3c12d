// Builds the Temporal workers of one worker process: the session queue (workflows and log appends), this
// host's model queue and the shared one (model steps, one concurrency cap for both) and this host's tool queue
// (tool steps run where the session's workspace lives).
import { hostname } from 'node:os';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createSessionActivities } from '../activities/session-activities.js';
import type { SessionRuntime } from '../activities/session-runtime.js';
import type { EvalActivities } from '../shared/eval-contracts.js';
import type {
  HostQueueActivities,
  ModelQueueActivities,
  SessionActivities,
  SessionQueueRegistrations,
} from '../shared/activity-queues.js';
import type { TemporalTls } from '../config/temporal-tls.js';
import { DhError } from '../core/index.js';
import type { Telemetry } from '../observability/telemetry.js';
import {
  bundleHasTracing,
  WORKFLOW_INTERCEPTOR_MODULES,
  workflowTracingSinks,
} from '../observability/workflow-tracing.js';
import { cachedSessionWorkflowBundle } from '../local-stack/workflow-bundle-cache.js';
import { sessionWorkflowsPath } from '../local-stack/bundle-workflows.js';
import { hostModelTaskQueue, hostTaskQueue, modelTaskQueue } from '../shared/task-queues.js';
import { ModelCallSlots } from './model-call-slots.js';

export const DEFAULT_TASK_QUEUE = 'dh-sessions';

export interface SessionWorkerOptions {
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly runtime: SessionRuntime;
  /**
   * A prebuilt workflow bundle (see bundleSessionWorkflows). When absent, the bundle comes from the
   * per-user bundle cache (cachedSessionWorkflowBundle: bundled once per content of the workflow code).
   */
  readonly workflowBundlePath?: string;
  /**
   * False: without `workflowBundlePath`, bundle the workflows from source at every start (the SDK's
   * `workflowsPath`) instead of using the bundle cache (`DH_WORKFLOW_BUNDLE_CACHE=off`). Default true.
   */
  readonly workflowBundleCache?: boolean;
  /** Where a line about an unusable bundle cache goes (default: stderr). */
  readonly log?: (line: string) => void;
  /** Names this host's tool queue; a replacement machine with the same id (and the same workspaces) takes over. */
  readonly hostId?: string;
  /** Concurrent model calls on this worker (the provider key's budget). */
  readonly modelConcurrency?: number;
  /** Concurrent tool steps on this worker. */
  readonly toolConcurrency?: number;
  /**
   * How payloads are converted and encoded (e.g. `{ payloadCodecs: [codec] }` to encrypt them). Every
   * client of these sessions needs the same codecs; codecs run outside the workflow sandbox. With the
   * AES-GCM codec, give the worker `workerDataConverterFromEnv()` (or `onUndecryptable: 'mark'`): a
   * signal or update it cannot decrypt is then refused by the session instead of failing its tasks.
   */
  readonly dataConverter?: DataConverter;
  /**
   * Session workflows kept in memory between their tasks (Temporal's sticky cache, `maxCachedWorkflows`).
   * Each costs ~2 MiB; one evicted is replayed from its history when it wakes (short: sessions
   * continue-as-new). Default: the SDK's, sized from the heap.
   */
  readonly maxCachedWorkflows?: number;
  /** OpenTelemetry (see startTelemetry): activity spans, workflow spans through the sink, provider metrics. */
  readonly telemetry?: Telemetry;
  /** TLS (and a client certificate for mTLS) for the Temporal connection; plaintext when absent. */
  readonly tls?: TemporalTls;
}

export interface SessionWorker {
  readonly workers: readonly Worker[];
  readonly connection: NativeConnection;
  readonly hostTaskQueue: string;
  /** Runs until `shutdown()`; resolves when every worker has drained. */
  run(): Promise<void>;
  shutdown(): Promise<void>;
}

export async function createSessionWorker(options: SessionWorkerOptions): Promise<SessionWorker> {
  const workflowCode = await workflowCodeFor(options);
  const connection = await connect(options.address, options.tls);
  const hostId = sanitize(options.hostId ?? hostname());
  const hostQueue = hostTaskQueue(options.taskQueue, hostId);
  const activities = queueActivities(createSessionActivities({ ...options.runtime, hostTaskQueue: hostQueue }));
  // Heartbeats carry cancellation: flush them every second so an interrupt lands within about a
  // second instead of 80% of the heartbeat timeout.
  const common = {
    connection,
    namespace: options.namespace,
    maxHeartbeatThrottleInterval: '1 second',
    defaultHeartbeatThrottleInterval: '1 second',
    ...(options.dataConverter !== undefined ? { dataConverter: options.dataConverter } : {}),
    interceptors: {
      activity: options.telemetry?.activityInterceptors ?? [],
      // Bundled from source here only; a prebuilt or cached bundle has them or not (see workflowCode).
      ...('workflowsPath' in workflowCode && options.telemetry
        ? { workflowModules: [...WORKFLOW_INTERCEPTOR_MODULES] }
        : {}),
    },
    sinks: workflowTracingSinks(options.telemetry),
  } as const;
  const unused = { type: 'fixed-size', numSlots: 1 } as const;
  const modelWork = {
    activities: activities.model,
    tuner: {
      activityTaskSlotSupplier: new ModelCallSlots(options.modelConcurrency ?? 16),
      workflowTaskSlotSupplier: unused,
      localActivityTaskSlotSupplier: unused,
      nexusTaskSlotSupplier: unused,
    },
  };
  const created = await Promise.allSettled([
    Worker.create({
      ...common,
      taskQueue: options.taskQueue,
      // Its local activities (openSession) run here too.
      activities: activities.session,
      ...(options.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: options.maxCachedWorkflows } : {}),
      ...workflowCode,
    }),
    // Model steps of this host's sessions (their caches are warm here, their quick calls run here), and
    // the shared model queue (sessions without a host, and steps a busy or missing host left); one count of
    // slots for both.
    Worker.create({ ...common, taskQueue: hostModelTaskQueue(options.taskQueue, hostId), ...modelWork }),
    Worker.create({ ...common, taskQueue: modelTaskQueue(options.taskQueue), ...modelWork }),
    Worker.create({
      ...common,
      taskQueue: hostQueue,
      activities: activities.host,
      maxConcurrentActivityTaskExecutions: options.toolConcurrency ?? 16,
    }),
  ]);
  const failed = created.find((r) => r.status === 'rejected');
  const workers = created.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  if (failed) {
    // Release what did get created (a worker that never ran still holds native resources and the
    // connection), then report the first failure.
    await Promise.allSettled(workers.map((w) => w.runUntil(Promise.resolve())));
    await connection.close().catch(() => undefined);
    throw failed.reason;
  }
  return {
    workers,
    connection,
    hostTaskQueue: hostQueue,
    run: async () => {
      try {
        await Promise.all(workers.map((w) => w.run()));
      } finally {
        await connection.close();
      }
    },
    shutdown: async () => {
      for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
      await Promise.resolve();
    },
  };
}

/** Each queue's worker registers only what is scheduled on that queue (shared/activity-queues.ts). */
function queueActivities(all: SessionActivities & EvalActivities): {
  readonly session: SessionQueueRegistrations;
  readonly model: ModelQueueActivities & EvalActivities;
  readonly host: HostQueueActivities;
} {
  const { openSession, closeTurn, closeStep, appendInbox, configureSession, modelStep, compact, toolStep, evalStep } =
    all;
  return {
    session: { openSession, closeTurn, closeStep, appendInbox, configureSession, toolStep, modelStep },
    // An eval step is a model call: it takes the model queue's slots like a session's step.
    model: { modelStep, compact, evalStep },
    host: { toolStep },
  };
}

/**
 * Where the session worker's workflow code comes from: the prebuilt bundle, the bundle cache, or (cache
 * off) the SDK bundling from source at start. With telemetry on, workflow spans need the tracing
 * interceptors in the workflow code: a prebuilt bundle without them is set aside for one with them.
 */
async function workflowCodeFor(
  options: SessionWorkerOptions,
): Promise<{ workflowBundle: { codePath: string } | { code: string } } | { workflowsPath: string }> {
  const prebuilt = options.workflowBundlePath;
  if (prebuilt !== undefined && (options.telemetry === undefined || (await bundleHasTracing(prebuilt)))) {
    return { workflowBundle: { codePath: prebuilt } };
  }
  // A payload or failure converter that runs in the sandbox must be bundled in: only the SDK's own
  // bundling (workflowsPath) does that.
  const converter = options.dataConverter;
  if (
    options.workflowBundleCache === false ||
    converter?.payloadConverterPath !== undefined ||
    converter?.failureConverterPath !== undefined
  ) {
    return { workflowsPath: sessionWorkflowsPath() };
  }
  const cached = await cachedSessionWorkflowBundle({
    tracing: options.telemetry !== undefined,
    ...(options.log !== undefined ? { log: options.log } : {}),
  });
  return { workflowBundle: cached.workflowBundle };
}

/** The worker's connection; a refused handshake or an unreachable frontend is one error naming the address. */
async function connect(address: string, tls: TemporalTls | undefined): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect({ address, ...(tls !== undefined ? { tls } : {}) });
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim();
    // An mTLS server drops a client without a certificate after the handshake: the native error only
    // says "broken pipe" — or, when the drop lands while the client is still writing, "operation was
    // canceled … connection closed" (seen on a loaded machine) — so name the likely cause.
    const hint =
      tls !== undefined &&
      tls.clientCertPair === undefined &&
      /broken pipe|connection reset|connection closed|certificate ?required/i.test(reason)
        ? ' (no client certificate was offered; a server that requires mTLS drops the connection like this)'
        : '';
    throw new DhError(
      'TEMPORAL_UNREACHABLE',
      `cannot reach Temporal at ${address}${tls !== undefined ? ' over TLS' : ''}: ${reason}${hint}`,
      { address, tls: tls !== undefined },
      { cause: error },
    );
  }
}

/** Task-queue-safe host id. */
function sanitize(id: string): string {
  return id.replace(/[^A-Za-z0-9._-]/g, '-');
}
