// The composition root of a worker process: configuration → store → provider → plugins (system
// prompt, built-in tools, approval policy, repeat guard) → activities → Temporal workers.
// `dh worker` and the root worker.ts (`npx tsx worker.ts`) run it until SIGINT/SIGTERM.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { workerDataConverterFromEnv } from '../codec/aes-gcm-codec.js';
import { temporalTlsFromEnv } from '../config/temporal-tls.js';
import { readWorkerConfig, type WorkerConfig } from '../config/worker-config.js';
import { startTelemetry } from '../observability/telemetry.js';
import type { Plugin } from '../plugins/plugin.js';
import { createPluginRuntime } from '../plugins/plugin-runtime.js';
import { apiKeyFromEnv, resolveProfile } from '../providers/provider-profiles.js';
import { openSessionStore } from '../stores/open-session-store.js';
import { createSessionWorker, type SessionWorker } from './create-session-worker.js';
import { defaultPlugins } from './default-plugins.js';

export async function startWorker(
  config: WorkerConfig = readWorkerConfig(),
  plugins?: Plugin[],
): Promise<SessionWorker & { close(): Promise<void> }> {
  // TLS comes from the same variables as the CLI's client (read first: a bad path fails before anything opens).
  const tls = temporalTlsFromEnv();
  // OpenTelemetry only when an OTLP endpoint is configured (a bad value fails here, before anything opens).
  const telemetry = startTelemetry();
  const builtin = config.provider === 'deepseek' || config.provider === 'openai';
  const profile = resolveProfile(config.provider, {
    ...(config.baseURL !== undefined ? { baseURL: config.baseURL } : {}),
    ...(config.apiKeyEnv !== undefined ? { apiKeyEnv: config.apiKeyEnv } : {}),
    // A generic endpoint knows only the configured model (text-only, no thinking field).
    ...(builtin
      ? {}
      : { models: [{ id: config.model, contextWindow: 128_000, vision: false, thinking: 'none' as const }] }),
  });
  const apiKey = apiKeyFromEnv(profile);
  if (!config.store.includes('://')) mkdirSync(dirname(config.store), { recursive: true });
  const store = await openSessionStore(config.store, { logKey: config.logKey });
  const hooks = createPluginRuntime({
    plugins: [...(plugins ?? defaultPlugins(config)), ...(telemetry ? [telemetry.plugin] : [])],
    seed: {
      provider: profile.name,
      model: config.model,
      includeUsage: true,
      ...(config.thinking !== undefined ? { thinking: config.thinking } : {}),
    },
  });
  // The worker's converter: an undecryptable signal or update is refused by the session, not a stuck task.
  const dataConverter = workerDataConverterFromEnv();
  const worker = await createSessionWorker({
    ...(dataConverter ? { dataConverter } : {}),
    ...(tls !== undefined ? { tls } : {}),
    ...(telemetry ? { telemetry } : {}),
    address: config.temporalAddress,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    modelConcurrency: config.modelConcurrency,
    ...(config.workflowCacheMax !== undefined ? { maxCachedWorkflows: config.workflowCacheMax } : {}),
    ...(config.hostId !== undefined ? { hostId: config.hostId } : {}),
    ...(config.workflowBundlePath !== undefined ? { workflowBundlePath: config.workflowBundlePath } : {}),
    ...(config.workflowBundleCache !== undefined ? { workflowBundleCache: config.workflowBundleCache } : {}),
    runtime: {
      store,
      profile,
      apiKey,
      ...hooks,
      idleTimeoutMs: 5 * 60_000,
      heartbeatMs: 1_000,
      workspaceFor: (sessionId) => join(config.home, 'workspaces', sessionId),
      sessionCache: {
        ...(config.sessionCacheMax !== undefined ? { maxSessions: config.sessionCacheMax } : {}),
        ...(config.sessionCacheIdleMs !== undefined ? { idleMs: config.sessionCacheIdleMs } : {}),
      },
    },
  }).catch(async (error: unknown) => {
    await store.close();
    await telemetry?.shutdown();
    throw error;
  });
  return {
    ...worker,
    close: async () => {
      await store.close();
      // Exports what is still buffered (the last spans and metric points) before the process exits.
      await telemetry?.shutdown();
    },
  };
}

/** Starts a worker from the environment's configuration and runs it until SIGINT or SIGTERM. */
export async function runWorker(): Promise<void> {
  const worker = await startWorker();
  const stop = (): void => void worker.shutdown();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    await worker.run();
  } finally {
    await worker.close();
  }
}
