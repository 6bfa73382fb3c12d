// The composition root of a worker process: configuration → store → provider → tools → activities →
// Temporal worker. `npx tsx worker.ts` runs one against TEMPORAL_ADDRESS until SIGINT/SIGTERM.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readWorkerConfig } from './src/config/worker-config.js';
import { apiKeyFromEnv, resolveProfile } from './src/providers/provider-profiles.js';
import { openSessionStore } from './src/stores/open-session-store.js';
import { createSessionWorker } from './src/worker/create-session-worker.js';
import { defaultHeaderComposer } from './src/worker/default-header.js';
import type { ToolDefinition } from './src/activities/session-runtime.js';

export async function runWorker(): Promise<void> {
  const config = readWorkerConfig();
  const builtin = config.provider === 'deepseek' || config.provider === 'openai';
  const profile = resolveProfile(config.provider, {
    ...(config.baseURL !== undefined ? { baseURL: config.baseURL } : {}),
    ...(config.apiKeyEnv !== undefined ? { apiKeyEnv: config.apiKeyEnv } : {}),
    // A generic endpoint knows only the configured model (text-only, no thinking field).
    ...(builtin ? {} : { models: [{ id: config.model, contextWindow: 128_000, vision: false, thinking: 'none' as const }] }),
  });
  const apiKey = apiKeyFromEnv(profile);
  if (!config.store.includes('://')) mkdirSync(dirname(config.store), { recursive: true });
  const store = await openSessionStore(config.store);
  const tools = new Map<string, ToolDefinition>();
  const worker = await createSessionWorker({
    address: config.temporalAddress,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    ...(config.workflowBundlePath !== undefined ? { workflowBundlePath: config.workflowBundlePath } : {}),
    runtime: {
      store,
      profile,
      apiKey,
      tools,
      composeHeader: defaultHeaderComposer({
        config: {
          provider: profile.name,
          model: config.model,
          includeUsage: true,
          ...(config.thinking !== undefined ? { thinking: config.thinking } : {}),
        },
        system: config.systemPrompt,
        tools,
      }),
      idleTimeoutMs: 5 * 60_000,
      heartbeatMs: 1_000,
      workspaceFor: (sessionId) => join(config.home, 'workspaces', sessionId),
    },
  });
  const stop = (): void => void worker.shutdown();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    await worker.run();
  } finally {
    await store.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runWorker().catch((error: unknown) => {
    console.error(`worker: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  });
}
