// Worker configuration from the environment, validated up front: a bad value is one clear line that
// names the variable, before anything connects or calls a provider.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { DhError, type CallConfig } from '../core/index.js';
import { ADAPTER_OWNED_FIELDS } from '../providers/wire-body.js';
import { LOG_KEY_ENV, logKeyFromEnv, type LogKey } from '../stores/log-key.js';
import { loadPricing, type PricingTable } from '../providers/pricing.js';
import { readFleetConfig, type FleetConfig } from './fleet-config.js';
import { chooseProvider } from './provider-choice.js';

export const ConfigErrorCode = 'INVALID_CONFIG';

type ExtraBody = NonNullable<CallConfig['extraBody']>;

const Env = z.object({
  DH_HOME: z.string().min(1).optional(),
  DH_STORE: z.string().min(1).optional(),
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).optional(),
  DH_TASK_QUEUE: z.string().min(1).optional(),
  DH_PROVIDER: z.string().min(1).optional(),
  // http(s) only: `localhost:8080/v1` parses as a URL (scheme `localhost:`) and would fail only at the first call.
  DH_BASE_URL: z
    .url({ protocol: /^https?$/, error: 'an http:// or https:// URL, e.g. http://127.0.0.1:8080/v1' })
    .optional(),
  DH_MODEL: z.string().min(1).optional(),
  DH_API_KEY_ENV: z
    .string()
    .regex(/^[A-Z_][A-Z0-9_]*$/, 'an environment variable name')
    .optional(),
  DH_THINKING: z.enum(['enabled', 'disabled']).optional(),
  DH_CONTEXT_WINDOW: z.coerce.number().int().min(256).max(100_000_000).optional(),
  DH_MAX_TOKENS: z.coerce.number().int().min(1).max(10_000_000).optional(),
  // A blank value must not coerce to 0 (greedy sampling): only a written number counts.
  DH_TEMPERATURE: z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'a number from 0 to 2, e.g. 0 or 0.7')
    .transform(Number)
    .pipe(z.number().max(2, 'a number from 0 to 2'))
    .optional(),
  DH_STREAM: z.enum(['on', 'off']).optional(),
  DH_EXTRA_BODY: z
    .string()
    .transform((text, ctx) => {
      try {
        const value: unknown = JSON.parse(text);
        if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as ExtraBody;
      } catch {
        // reported below
      }
      ctx.addIssue({
        code: 'custom',
        message: 'a JSON object of extra request-body fields, e.g. {"tool_choice":"auto"}',
      });
      return z.NEVER;
    })
    .refine((body) => !Object.keys(body).some((key) => ADAPTER_OWNED_FIELDS.includes(key)), {
      message: `may not set a field dh writes itself (${ADAPTER_OWNED_FIELDS.join(', ')})`,
    })
    .optional(),
  DH_SYSTEM_PROMPT: z.string().optional(),
  DH_WORKFLOW_BUNDLE: z.string().min(1).optional(),
  DH_WORKFLOW_BUNDLE_CACHE: z.enum(['on', 'off']).optional(),
  DH_HOST_ID: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,100}$/, 'letters, digits, dot, dash, underscore')
    .optional(),
  DH_MODEL_CONCURRENCY: z.coerce.number().int().min(1).max(1000).optional(),
  DH_SESSION_CACHE_MAX: z.coerce.number().int().min(1).max(1_000_000).optional(),
  DH_SESSION_CACHE_IDLE_MS: z.coerce.number().int().min(1).max(604_800_000).optional(), // up to a week
  // 0 is meaningful (no sticky cache), so a blank value must not coerce to it.
  DH_WORKFLOW_CACHE_MAX: z
    .string()
    .regex(/^\d+$/, 'a whole number of workflows (0 turns the cache off)')
    .transform(Number)
    .pipe(z.number().max(1_000_000))
    .optional(),
  DH_SHELL_SANDBOX: z.enum(['auto', 'bwrap', 'none']).optional(),
  DH_APPROVAL_ASK: z.string().optional(),
  DH_APPROVAL_DENY: z.string().optional(),
  DH_SUBAGENT_DEPTH: z.coerce.number().int().min(0).max(8).optional(),
});

export interface WorkerConfig {
  readonly home: string;
  readonly store: string;
  readonly temporalAddress: string;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly provider: string;
  readonly baseURL: string | undefined;
  readonly model: string;
  readonly apiKeyEnv: string | undefined;
  readonly thinking: 'enabled' | 'disabled' | undefined;
  /** DH_CONTEXT_WINDOW: the model's context window; wins over discovery and the profile. */
  readonly contextWindow?: number;
  /** DH_MAX_TOKENS: the answer's output limit (`max_tokens`); generic endpoints default to one (worker-profile.ts). */
  readonly maxTokens?: number;
  /** DH_TEMPERATURE: the sampling temperature every request records and sends; the provider's default when unset. */
  readonly temperature?: number;
  /** DH_STREAM=off: one whole response per call instead of a stream (recorded as `stream: false`). */
  readonly stream?: false;
  /** DH_EXTRA_BODY: extra top-level request-body fields for a generic endpoint, recorded in the header. */
  readonly extraBody?: ExtraBody;
  readonly systemPrompt: string;
  readonly workflowBundlePath: string | undefined;
  /**
   * Without a prebuilt bundle, load the workflow bundle from the per-user cache (bundled once per
   * content of the workflow code); false (`DH_WORKFLOW_BUNDLE_CACHE=off`) bundles from source at every start.
   */
  readonly workflowBundleCache?: boolean;
  readonly hostId: string | undefined;
  readonly modelConcurrency: number;
  /** Bounds of the worker's session cache; undefined = the cache's defaults. */
  readonly sessionCacheMax: number | undefined;
  readonly sessionCacheIdleMs: number | undefined;
  /** Session workflows kept in the worker's sticky cache (Temporal's maxCachedWorkflows); SDK default when unset. */
  readonly workflowCacheMax: number | undefined;
  readonly shellSandbox: 'auto' | 'bwrap' | 'none';
  /** Tool names that pause for approval / never run. */
  readonly approvalAsk: readonly string[];
  readonly approvalDeny: readonly string[];
  /** DH_SUBAGENT_DEPTH: how deep subagents may go (the `delegate` tool); 0, the default, offers no delegation. */
  readonly subagentDepth: number;
  /** DH_LOG_KEY: the store MACs every row it inserts, and audit and import verify the MACs. */
  readonly logKey?: LogKey;
  /** The fleet controls (DH_LIMITS, DH_RATE_LIMIT_RPM and the rest, DH_TENANT, DH_SESSION_COST_CAP_USD) for this provider. */
  readonly fleet: FleetConfig;
  /** Model prices (DH_PRICING over the defaults). */
  readonly pricing: PricingTable;
}

export const DEFAULT_MODELS: Readonly<Record<string, string>> = {
  deepseek: 'deepseek-v4-flash',
  openai: 'gpt-4.1-mini',
};
export const DEFAULT_SYSTEM_PROMPT =
  'You are a careful software agent. Use the tools to inspect and change the workspace; say what you did.';

export function readWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const parsed = Env.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new DhError(
      ConfigErrorCode,
      `invalid configuration: ${issue?.path.join('.') ?? 'env'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  const e = parsed.data;
  const home = e.DH_HOME ?? join(homedir(), '.dh');
  const choice = chooseProvider(e, DEFAULT_MODELS);
  if (!choice.ok) throw new DhError(ConfigErrorCode, `invalid configuration: ${choice.problem}`, choice.details);
  const { provider, model } = choice;
  if (e.DH_EXTRA_BODY !== undefined && Object.hasOwn(DEFAULT_MODELS, provider)) {
    throw new DhError(
      ConfigErrorCode,
      `invalid configuration: DH_EXTRA_BODY is for generic endpoints; DH_PROVIDER="${provider}" is built in`,
      { variable: 'DH_EXTRA_BODY' },
    );
  }
  if (e.DH_MAX_TOKENS !== undefined && e.DH_CONTEXT_WINDOW !== undefined && e.DH_MAX_TOKENS > e.DH_CONTEXT_WINDOW) {
    throw new DhError(
      ConfigErrorCode,
      `invalid configuration: DH_MAX_TOKENS (${e.DH_MAX_TOKENS}) exceeds DH_CONTEXT_WINDOW (${e.DH_CONTEXT_WINDOW})`,
    );
  }
  let logKey: LogKey | undefined;
  try {
    logKey = logKeyFromEnv(env);
  } catch (error) {
    // The key's own message names the variable and never the value.
    const problem = error instanceof Error ? error.message : String(error);
    throw new DhError(ConfigErrorCode, `invalid configuration: ${problem}`, { variable: LOG_KEY_ENV });
  }
  return {
    home,
    store: e.DH_STORE ?? join(home, 'sessions.db'),
    temporalAddress: e.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    namespace: e.TEMPORAL_NAMESPACE ?? 'default',
    taskQueue: e.DH_TASK_QUEUE ?? 'dh-sessions',
    provider,
    baseURL: e.DH_BASE_URL,
    model,
    apiKeyEnv: e.DH_API_KEY_ENV,
    // DeepSeek's current models think by default; the choice is recorded explicitly in the header.
    thinking: e.DH_THINKING ?? (provider === 'deepseek' ? 'disabled' : undefined),
    ...(e.DH_CONTEXT_WINDOW !== undefined ? { contextWindow: e.DH_CONTEXT_WINDOW } : {}),
    ...(e.DH_MAX_TOKENS !== undefined ? { maxTokens: e.DH_MAX_TOKENS } : {}),
    ...(e.DH_TEMPERATURE !== undefined ? { temperature: e.DH_TEMPERATURE } : {}),
    ...(e.DH_STREAM === 'off' ? { stream: false as const } : {}),
    ...(e.DH_EXTRA_BODY !== undefined ? { extraBody: e.DH_EXTRA_BODY } : {}),
    systemPrompt: e.DH_SYSTEM_PROMPT ?? DEFAULT_SYSTEM_PROMPT,
    workflowBundlePath: e.DH_WORKFLOW_BUNDLE,
    workflowBundleCache: e.DH_WORKFLOW_BUNDLE_CACHE !== 'off',
    hostId: e.DH_HOST_ID,
    // With a fleet quota, steps wait in the limiter (fair, and shown as waiting), not in Temporal's task
    // queue: a waiting step costs a sleeping activity slot, so the worker takes many more of them.
    modelConcurrency: e.DH_MODEL_CONCURRENCY ?? (fleetQuotaConfigured(env) ? FLEET_MODEL_CONCURRENCY : 16),
    sessionCacheMax: e.DH_SESSION_CACHE_MAX,
    sessionCacheIdleMs: e.DH_SESSION_CACHE_IDLE_MS,
    workflowCacheMax: e.DH_WORKFLOW_CACHE_MAX,
    shellSandbox: e.DH_SHELL_SANDBOX ?? 'auto',
    approvalAsk: names(e.DH_APPROVAL_ASK),
    approvalDeny: names(e.DH_APPROVAL_DENY),
    subagentDepth: e.DH_SUBAGENT_DEPTH ?? 0,
    ...(logKey !== undefined ? { logKey } : {}),
    fleet: readFleetConfig(provider, env),
    pricing: loadPricing(env),
  };
}

/** The worker's default model concurrency when a fleet quota is configured. */
export const FLEET_MODEL_CONCURRENCY = 256;

function fleetQuotaConfigured(env: NodeJS.ProcessEnv): boolean {
  return ['DH_LIMITS', 'DH_RATE_LIMIT_RPM', 'DH_RATE_LIMIT_TPM', 'DH_RATE_LIMIT_CONCURRENT'].some(
    (name) => (env[name]?.trim() ?? '') !== '',
  );
}

function names(list: string | undefined): string[] {
  return (list ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n.length > 0);
}
