// Child-process entry of the crash tests: one session worker built like the in-process harness (scripted
// provider, SQLite or PostgreSQL store, test tools), configured by JSON in DH_WORKER_PROCESS_CONFIG (or argv[2]).
// Prints `worker ready` once the worker exists; SIGTERM, SIGINT or EOF on stdin drain it and exit 0.
// Usage: node --import tsx test/helpers/worker-process.ts ['<config json>']  (see child-worker.ts)
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { failpointAfter, failpointArmed } from '../../src/activities/failpoints.js';
import type { ToolDefinition } from '../../src/plugins/contracts.js';
import { openSessionStore } from '../../src/stores/open-session-store.js';
import type { SessionStore } from '../../src/stores/session-store.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { FleetLimiter } from '../../src/limiter/fleet-limiter.js';
import { openLimiterStore, quotaBucket } from '../../src/limiter/open-fleet-limiter.js';
import { createDelegateTool } from '../../src/tools/delegate.js';
import { liveStreamPlugin } from '../../src/streaming/live-stream-plugin.js';
import { openDeltaChannel } from '../../src/streaming/open-delta-channel.js';
import { createSessionWorker } from '../../src/worker/create-session-worker.js';
import { defaultHeaderComposer } from '../../src/worker/default-header.js';
import { WORKER_CONFIG_ENV, WORKER_READY_LINE, type WorkerProcessConfig } from './child-worker.js';
import { scriptedProfile, SCENARIO_MODEL as TEST_MODEL } from './scenario-runtime.js';
import { loadPolicy } from '../../src/policy/policy-file.js';
import { createPolicyEngine } from '../../src/policy/policy-engine.js';
import { echoTool, idempotentSleepTool, quickVariant, sleepTool } from './test-tools.js';

const raw = process.env[WORKER_CONFIG_ENV] ?? process.argv[2];
if (raw === undefined || raw === '') {
  throw new Error(`worker-process: pass the config as JSON in ${WORKER_CONFIG_ENV} or as the first argument`);
}
const config = JSON.parse(raw) as WorkerProcessConfig;
for (const key of [
  'address',
  'namespace',
  'taskQueue',
  'workflowBundlePath',
  'storePath',
  'providerBaseURL',
  'runLog',
]) {
  if (typeof (config as unknown as Record<string, unknown>)[key] !== 'string') {
    throw new Error(`worker-process: config.${key} must be a string`);
  }
}

// Before any connection: quieter logs (to stderr), and no SDK signal handlers — shutdown is ours below.
Runtime.install({ logger: new DefaultLogger(config.logLevel ?? 'WARN'), shutdownSignals: [] });

const opened: SessionStore =
  config.storeUrl !== undefined ? await openSessionStore(config.storeUrl) : SqliteSessionStore.open(config.storePath);
const store = failpointArmed('continue-as-new')
  ? killAfterTurnEnd(opened, config.continueAsNewKillDelayMs ?? 20)
  : opened;
const profile = scriptedProfile(config.providerBaseURL);
const apiKey = 'sk-test-not-a-real-key';
// The limiter's state sits beside the store (a `.limits.db` file, or tables in the PostgreSQL database), as
// `dh worker` opens it: every worker process of the test shares it.
const limiter =
  config.fleetQuota !== undefined
    ? new FleetLimiter({
        store: await openLimiterStore(config.storeUrl ?? config.storePath),
        bucket: quotaBucket(profile, apiKey),
        quota: config.fleetQuota,
        ...(config.tenants !== undefined ? { tenants: config.tenants } : {}),
      })
    : undefined;
const tools = new Map<string, ToolDefinition>(
  [
    echoTool,
    sleepTool(config.runLog),
    idempotentSleepTool(config.runLog),
    quickVariant(sleepTool(config.runLog)),
    quickVariant(idempotentSleepTool(config.runLog)),
    ...(config.subagentDepth ? [createDelegateTool({ maxDepth: config.subagentDepth })] : []),
  ].map((t) => [t.schema.name, t]),
);
// The live side channel next to the store, published to as `dh worker`'s default plugins do.
const live = config.liveStream ? liveStreamPlugin(openDeltaChannel(config.storeUrl ?? config.storePath)) : null;
// The policy file read as `dh worker` reads DH_POLICY.
const policy =
  config.policyFile !== undefined
    ? await loadPolicy({ home: config.runLog, env: { DH_POLICY: config.policyFile } })
    : undefined;
const worker = await createSessionWorker({
  address: config.address,
  namespace: config.namespace,
  taskQueue: config.taskQueue,
  workflowBundlePath: config.workflowBundlePath,
  runtime: {
    store,
    profile,
    apiKey,
    tools,
    ...(limiter !== undefined ? { limiter } : {}),
    ...(config.tenant !== undefined ? { tenant: config.tenant } : {}),
    composeHeader: defaultHeaderComposer({
      config: { provider: profile.name, model: TEST_MODEL, includeUsage: true },
      system: 'You are a test agent.',
      tools,
    }),
    ...(policy !== undefined ? { policy: createPolicyEngine(policy) } : {}),
    idleTimeoutMs: config.idleTimeoutMs,
    heartbeatMs: config.heartbeatMs ?? 500,
    ...(live !== null
      ? {
          onRequest: (request, context) => {
            live.onRequest?.(request, context);
            return request;
          },
          onStreamDelta: (delta, context) => live.onStreamDelta?.(delta, context),
          onToolProgress: (report, context) => live.onToolProgress?.(report, context),
        }
      : {}),
  },
  ...(config.hostId !== undefined ? { hostId: config.hostId } : {}),
  ...(config.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: config.maxCachedWorkflows } : {}),
  ...(config.modelConcurrency !== undefined ? { modelConcurrency: config.modelConcurrency } : {}),
});

const running = worker.run();
let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  void worker.shutdown();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
// The parent holds our stdin open for its lifetime: EOF means it is gone, and so should we be.
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
process.stdout.write(`${WORKER_READY_LINE}\n`);

let exitCode = 0;
try {
  await running;
} catch (error) {
  console.error(`worker-process: the worker failed: ${error instanceof Error ? error.stack : String(error)}`);
  exitCode = 1;
} finally {
  await limiter?.close();
  await store.close();
}
// Open sockets (a model stream cut by the shutdown) must not keep a drained worker alive.
process.exit(exitCode);

/**
 * The `continue-as-new` failpoint: the workflow sandbox cannot host a failpoint, so the store arms it.
 * Once an append holding a `turn/end` returns, the worker dies `delayMs` later — while the closing
 * activity's completion reaches the server and the workflow task that continues as new (on a server
 * suggesting it at every turn boundary) runs.
 */
function killAfterTurnEnd(inner: SessionStore, delayMs: number): SessionStore {
  return {
    create: (sessionId, options) => inner.create(sessionId, options),
    append: async (sessionId, expectedSeq, events) => {
      const result = await inner.append(sessionId, expectedSeq, events);
      if (events.some((e) => e.type === 'turn/end')) failpointAfter('continue-as-new', delayMs);
      return result;
    },
    read: (sessionId, fromSeq, toSeq, options) => inner.read(sessionId, fromSeq, toSeq, options),
    readChain: (sessionId, fromSeq, toSeq) => inner.readChain(sessionId, fromSeq, toSeq),
    head: (sessionId) => inner.head(sessionId),
    list: (options) => inner.list(options),
    close: () => inner.close(),
  };
}
