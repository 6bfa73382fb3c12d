// The composition root of a worker process: configuration → store → provider → plugins (system
// prompt, built-in tools, approval policy, repeat guard) → activities → Temporal workers.
// `npx tsx worker.ts` runs one against TEMPORAL_ADDRESS until SIGINT/SIGTERM.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { temporalTlsFromEnv } from './src/config/temporal-tls.js';
import { readWorkerConfig, type WorkerConfig } from './src/config/worker-config.js';
import { approvalPolicyPlugin, systemPromptPlugin, toolsPlugin } from './src/plugins/basic-plugins.js';
import type { Plugin } from './src/plugins/plugin.js';
import { createPluginRuntime } from './src/plugins/plugin-runtime.js';
import { repeatGuardPlugin } from './src/plugins/repeat-guard-plugin.js';
import { createLogger } from './src/observability/logger.js';
import { loggingPlugin } from './src/observability/logging-plugin.js';
import { startTelemetry } from './src/observability/telemetry.js';
import { liveStreamPlugin } from './src/streaming/live-stream-plugin.js';
import { openDeltaChannel } from './src/streaming/open-delta-channel.js';
import { apiKeyFromEnv, resolveProfile } from './src/providers/provider-profiles.js';
import { openSessionStore } from './src/stores/open-session-store.js';
import { createBuiltinTools } from './src/tools/builtin-tools.js';
import { workerDataConverterFromEnv } from './src/codec/aes-gcm-codec.js';
import { createSessionWorker, type SessionWorker } from './src/worker/create-session-worker.js';

/** The default plugin list of a worker; embedders compose their own from the same pieces. */
export function defaultPlugins(config: WorkerConfig): Plugin[] {
  const builtins = [...createBuiltinTools({ shell: { sandbox: config.shellSandbox } })];
  const shell = builtins.at(-1) as { sandboxUnavailable?: string } | undefined;
  if (shell?.sandboxUnavailable) {
    console.warn(
      `worker: the shell tool runs WITHOUT an OS sandbox (${shell.sandboxUnavailable}); every shell call asks for approval`,
    );
  }
  return [
    systemPromptPlugin(config.systemPrompt),
    toolsPlugin('builtin-tools', builtins),
    approvalPolicyPlugin({ ask: config.approvalAsk, deny: config.approvalDeny, tools: builtins }),
    repeatGuardPlugin(),
    // Token deltas to the side channel next to the store (never into history or the log).
    liveStreamPlugin(openDeltaChannel(config.store), { warn: (message) => console.warn(message) }),
    loggingPlugin(createLogger()),
  ];
}

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

if (import.meta.url === `file://${process.argv[1]}`) {
  runWorker().catch((error: unknown) => {
    console.error(`worker: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  });
}
