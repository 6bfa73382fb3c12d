// The composition root of a worker process: configuration (with its files: tool policy, MCP servers) →
// provider (its model's context window: configured, listed or asked of the endpoint; a generic endpoint's
// served models) → MCP servers → store → plugins (system prompt, built-in and MCP tools, approval policy,
// repeat guard) → activities → Temporal workers.
// `dh worker` and the root worker.ts (`npx tsx worker.ts`) run it until SIGINT/SIGTERM.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { workerDataConverterFromEnv } from '../codec/aes-gcm-codec.js';
import { temporalTlsFromEnv } from '../config/temporal-tls.js';
import { readWorkerConfig, type WorkerConfig } from '../config/worker-config.js';
import { openFleetLimiter } from '../limiter/open-fleet-limiter.js';
import {
  genericMaxTokens,
  GENERIC_CONTEXT_WINDOW,
  isBuiltinProvider,
  modelEntry,
  workerMaxTokens,
  workerProfile,
  type ServedModel,
} from '../config/worker-profile.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { startTelemetry } from '../observability/telemetry.js';
import { installTemporalLoggerIfUnset } from '../observability/temporal-logger.js';
import type { Plugin } from '../plugins/plugin.js';
import { apiKeyFromEnv, type ProviderProfile } from '../providers/provider-profiles.js';
import { openSessionStore } from '../stores/open-session-store.js';
import { createSessionWorker, type SessionWorker } from './create-session-worker.js';
import { defaultAgent, workerPlugins } from './default-plugins.js';
import type { Agent } from '../agents/define-agent.js';
import { agentRegistry, serveAgent, type AgentRegistry } from '../agents/agent-registry.js';
import { agentHooks } from '../agents/agent-hooks.js';
import { pluginListAgent } from '../agents/plugin-list-agent.js';
import { publishAgents } from '../agents/publish-agents.js';
import type { CallConfig } from '../core/index.js';
import { DhError } from '../core/errors.js';
import { loadPolicy, type Policy } from '../policy/policy-file.js';
import { createPolicyEngine, policyEvaluators } from '../policy/policy-engine.js';
import { reloadingPolicy } from '../policy/policy-reloader.js';
import { llmPolicyEvaluator, policyFileEvaluators } from '../policy/llm-policy-evaluator.js';
import { discoverEndpoint } from './discover-context-window.js';
import { loadMcpConfig, type LoadedMcpConfig } from '../mcp/mcp-config.js';
import { startMcpHub, type McpHub } from '../mcp/mcp-hub.js';
import { mcpTools } from '../mcp/mcp-tools.js';
import type { ToolDefinition } from '../plugins/contracts.js';
import { AttachmentStore, attachmentRoot } from '../stores/attachment-store.js';

export interface StartWorkerOptions {
  /**
   * The agents this worker serves (`defineAgent`); a session chooses one by name. Default: one agent, `default`,
   * from the worker's configuration (DH_MODEL, DH_SYSTEM_PROMPT, the built-in and MCP tools).
   */
  readonly agents?: readonly Agent[];
  /** What a session that names no agent runs: `default` when served, else the first of `agents`. */
  readonly defaultAgent?: string;
  /** Default: read from the environment (readWorkerConfig). */
  readonly config?: WorkerConfig;
  /**
   * The whole plugin list of the `default` agent (its system prompt included) instead of the configured one.
   * Not with `agents`: give an agent its own `plugins`.
   */
  readonly plugins?: readonly Plugin[];
  /** Where the worker's start-up lines go (the context window it found); default JSON lines on stderr. */
  readonly log?: Logger;
}

/** A running worker: `run()` until `shutdown()`, then `close()` what it opened. */
export type DhWorker = SessionWorker & { close(): Promise<void>; readonly agents: AgentRegistry };

export async function startWorker(options: StartWorkerOptions = {}): Promise<DhWorker> {
  const config = options.config ?? readWorkerConfig();
  if (options.agents !== undefined && options.plugins !== undefined) {
    throw new DhError(
      'INVALID_CONFIG',
      'startWorker: give `agents` or `plugins`, not both (an agent takes its own plugins)',
    );
  }
  // TLS comes from the same variables as the CLI's client (read first: a bad path fails before anything opens).
  const tls = temporalTlsFromEnv();
  // OpenTelemetry only when an OTLP endpoint is configured (a bad value fails here, before anything opens).
  const telemetry = startTelemetry();
  const log = options.log ?? createLogger().child({ component: 'worker', pid: process.pid });
  // The SDK's own lines through the same logger (unless the process set up Temporal's runtime already).
  await installTemporalLoggerIfUnset(log);
  const configured = workerProfile(config);
  const apiKey = apiKeyFromEnv(configured);
  // The configuration files before the provider is asked anything: a bad one fails the start with its line
  // and column alone, not after the context-window probe's warning about an endpoint it never needed.
  const policy = await loadPolicy({ home: config.home, env: process.env });
  if (policy !== undefined) {
    checkPolicyEvaluators(policy);
    log.info(`tool policy ${policy.file} (${policy.rules.length} rules, version ${policy.version})`);
  }
  const mcpFile = await loadMcpConfig({ home: config.home, env: process.env });
  const endpoint = await endpointOf(config, configured, apiKey, log);
  const profile = workerProfile(config, {
    contextWindow: endpoint.from === 'discovered' ? endpoint.tokens : undefined,
    served: endpoint.served,
  });
  // DH_MAX_TOKENS, checked against the configured model's window, holds for every model. Without it a generic
  // endpoint's limit is not seeded: each header gets the default of the window of the model it names (a plugin
  // may switch models), after the request waterfall (context-window.ts).
  const maxTokens = config.maxTokens !== undefined ? workerMaxTokens(config, endpoint.tokens) : undefined;
  const defaultMaxTokens =
    config.maxTokens === undefined && !isBuiltinProvider(config.provider) ? genericMaxTokens : undefined;
  if (!config.store.includes('://')) mkdirSync(dirname(config.store), { recursive: true });
  // MCP servers before anything else opens: one that cannot start fails the start, naming it.
  const mcp = await startWorkerMcp(mcpFile, config, log);
  const { fleet, pricing } = config;
  const store = await openSessionStore(config.store, { logKey: config.logKey }).catch(async (error: unknown) => {
    await mcp?.hub.close();
    throw error;
  });
  const limiter = await openFleetLimiter(config.store, fleet, profile, apiKey).catch(async (error: unknown) => {
    await store.close();
    await mcp?.hub.close();
    throw error;
  });
  if (limiter) log.info(fleetLine(limiter.bucket, fleet), { limiterBucket: limiter.bucket });
  const seed: CallConfig = {
    provider: profile.name,
    model: config.model,
    includeUsage: true,
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    ...(config.temperature !== undefined ? { temperature: config.temperature } : {}),
    ...(config.stream === false ? { stream: false } : {}),
    // Every OpenAI-compatible server takes "", and some refuse the null the API defines.
    ...(isBuiltinProvider(config.provider) ? {} : { nullContentAs: 'empty-string' as const }),
    ...(config.extraBody !== undefined ? { extraBody: config.extraBody } : {}),
    ...(config.thinking !== undefined ? { thinking: config.thinking } : {}),
  };
  const shared = [...workerPlugins(config), ...(telemetry ? [telemetry.plugin] : [])];
  const base = { seed, workerPlugins: shared, policyFile: policy !== undefined };
  const served = options.plugins
    ? [pluginListAgent([...options.plugins, ...(telemetry ? [telemetry.plugin] : [])], seed)]
    : (options.agents ?? [defaultAgent(config, mcp?.tools, { policy: policy !== undefined })]).map((agent) =>
        serveAgent(agent, base),
      );
  const agents = agentRegistry(served, options.defaultAgent);
  const hooks = agentHooks(agents);
  const pluginList = served.flatMap((agent) => agent.plugins);
  // The worker's converter: an undecryptable signal or update is refused by the session, not a stuck task.
  const dataConverter = workerDataConverterFromEnv();
  const attachments = new AttachmentStore(attachmentRoot(config));
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
      // The images messages cite: read (and verified) from $DH_HOME/attachments when a step claims and sends them.
      readAttachment: (ref) => attachments.get(ref),
      agents,
      apiKey,
      ...(endpoint.from === 'assumed' ? { contextWindowAssumed: true } : {}),
      ...(defaultMaxTokens !== undefined ? { defaultMaxTokens } : {}),
      ...hooks,
      ...(policy !== undefined
        ? {
            policy: createPolicyEngine(followPolicy(policy, log), policyEvaluators(pluginList), policyFileEvaluators()),
          }
        : {}),
      ...(limiter !== undefined ? { limiter } : {}),
      ...(fleet.tenant !== undefined ? { tenant: fleet.tenant } : {}),
      pricing,
      ...(fleet.sessionCostCapUsd !== undefined ? { sessionCostCapUsd: fleet.sessionCostCapUsd } : {}),
      idleTimeoutMs: 5 * 60_000,
      heartbeatMs: 1_000,
      workspaceFor: (sessionId) => join(config.home, 'workspaces', sessionId),
      sessionCache: {
        ...(config.sessionCacheMax !== undefined ? { maxSessions: config.sessionCacheMax } : {}),
        ...(config.sessionCacheIdleMs !== undefined ? { idleMs: config.sessionCacheIdleMs } : {}),
      },
    },
  }).catch(async (error: unknown) => {
    await limiter?.close();
    await store.close();
    await mcp?.hub.close();
    await telemetry?.shutdown();
    throw error;
  });
  // Listed for `dh agents ls`, `dh run --agent` and the console while it runs; publishing never fails the start.
  const published = await publishAgents({
    store: config.store,
    taskQueue: config.taskQueue,
    ...(config.hostId !== undefined ? { hostId: config.hostId } : {}),
    agents,
    log,
  });
  return {
    ...worker,
    agents,
    close: async () => {
      await published.stop();
      await limiter?.close();
      await store.close();
      await mcp?.hub.close();
      // Exports what is still buffered (the last spans and metric points) before the process exits.
      await telemetry?.shutdown();
    },
  };
}

/** The worker's MCP servers (`$DH_HOME/mcp.json` or DH_MCP_CONFIG, loaded) and their tools; none without a file. */
async function startWorkerMcp(
  file: LoadedMcpConfig | undefined,
  config: WorkerConfig,
  log: Logger,
): Promise<{ hub: McpHub; tools: ToolDefinition[] } | undefined> {
  if (!file) return undefined;
  const hub = await startMcpHub(file, { env: process.env, strict: true, log: (line) => log.warn(line) });
  const tools = mcpTools(hub, { attachments: new AttachmentStore(attachmentRoot(config)) });
  log.info(
    `MCP servers from ${file.file}: ${hub.status.map((s) => `${s.name} (${s.tools.length} tools)`).join(', ')}`,
    {
      mcpServers: hub.status.length,
      mcpTools: tools.length,
    },
  );
  return { hub, tools };
}

/**
 * The configured model's context window: DH_CONTEXT_WINDOW, a built-in model's listed one, what a generic
 * endpoint reports, or the generic fallback — `assumed`, with one line saying why. A generic endpoint is also
 * asked which models it serves (`served`; undefined when it has no list): both in one round of probes, here.
 */
async function endpointOf(
  config: WorkerConfig,
  profile: ProviderProfile,
  apiKey: string | undefined,
  log: Logger,
): Promise<{
  tokens: number | undefined;
  from: 'configured' | 'discovered' | 'assumed';
  served?: readonly ServedModel[] | undefined;
}> {
  const listed = modelEntry(profile, config.model)?.contextWindow;
  if (listed === undefined || isBuiltinProvider(config.provider)) return { tokens: listed, from: 'configured' };
  const askWindow = config.contextWindow === undefined;
  const found = await discoverEndpoint({
    baseURL: profile.baseURL,
    model: config.model,
    askWindow,
    ...(apiKey !== undefined ? { apiKey } : {}),
  });
  const served = found.served.models;
  if (served !== undefined) {
    log.info(`models served (${found.served.source}): ${served.map(modelLine).join(', ') || 'none'}`, {
      servedModels: served.length,
    });
  } else {
    log.info(
      `no model list from ${profile.baseURL} (${found.served.reason}): any model a request names is sent, ` +
        `one other than "${config.model}" with a ${GENERIC_CONTEXT_WINDOW}-token window`,
      { servedModels: null },
    );
  }
  const window = found.window;
  if (window === null) return { tokens: listed, from: 'configured', served };
  if (window.tokens !== undefined) {
    log.info(`context window of "${config.model}": ${window.tokens} tokens (${window.source})`, {
      contextWindow: window.tokens,
    });
    return { tokens: window.tokens, from: 'discovered', served };
  }
  log.warn(
    `context window of "${config.model}" not reported by ${profile.baseURL} (${window.reason}); ` +
      `assuming ${listed} tokens: set DH_CONTEXT_WINDOW to the server's real one`,
    { contextWindow: listed },
  );
  return { tokens: listed, from: 'assumed', served };
}

/** A served model as the start-up line names it: its id, and its window when the server reported one. */
function modelLine(model: ServedModel): string {
  return model.contextWindow !== undefined ? `${model.id} (${model.contextWindow} tokens)` : model.id;
}

/** A policy whose LLM evaluator cannot be built (its key variable unset) stops the start, naming the file. */
function checkPolicyEvaluators(policy: Policy): void {
  if (policy.evaluator.llm === undefined) return;
  try {
    llmPolicyEvaluator(policy.evaluator.llm);
  } catch (error) {
    throw new DhError(
      'INVALID_CONFIG',
      `invalid tool policy in ${policy.file}: evaluator.llm: ${error instanceof Error ? error.message : String(error)}`,
      { file: policy.file },
    );
  }
}

/** The policy as the file says now: an edit applies from the next call, and a broken file asks for everything. */
function followPolicy(policy: Policy, log: Logger) {
  return reloadingPolicy(policy, {
    reloaded: (now) => log.info(`tool policy ${now.file} reloaded (${now.rules.length} rules, version ${now.version})`),
    broken: (problem, file) =>
      log.error(`tool policy ${file} no longer loads, so every tool call asks until it does: ${problem}`, { file }),
  });
}

/** The start-up line that says the fleet limiter is on, for which account, at what quota. */
function fleetLine(bucket: string, fleet: WorkerConfig['fleet']): string {
  const { requestsPerMinute, tokensPerMinute, maxConcurrent } = fleet.quota;
  const parts = [
    ...(requestsPerMinute !== undefined ? [`${requestsPerMinute} requests/min`] : []),
    ...(tokensPerMinute !== undefined ? [`${tokensPerMinute} tokens/min`] : []),
    ...(maxConcurrent !== undefined ? [`${maxConcurrent} calls at once`] : []),
  ];
  const tenant = fleet.tenant !== undefined ? `; tenant ${fleet.tenant}` : '';
  return `fleet limiter on for account ${bucket}: ${parts.length > 0 ? parts.join(', ') : 'no account quota'}${tenant}`;
}

/** Starts a worker from the environment's configuration and runs it until SIGINT or SIGTERM. */
export async function runWorker(options: StartWorkerOptions = {}): Promise<void> {
  const worker = await startWorker(options);
  const stop = (): void => void worker.shutdown();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    await worker.run();
  } finally {
    await worker.close();
  }
}
