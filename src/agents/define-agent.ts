// defineAgent: an agent as code — name, instructions, model, tools, plugins, approval policy, limits — checked
// once and given a version (a digest of everything in it that can be compared), which every log it runs records.
import { z } from 'zod';
import { canonicalJson, DhError, sha256Digest } from '../core/index.js';
import type { ApprovalPolicy } from '../plugins/basic-plugins.js';
import type { ToolDefinition } from '../plugins/contracts.js';
import type { Plugin } from '../plugins/plugin.js';
import type { SessionLimits } from '../shared/session-workflow-input.js';
import { AGENT_NAME_PATTERN } from '../core/agent-fields.js';

export const InvalidAgentCode = 'INVALID_AGENT';

export interface AgentCompaction {
  /** Compact when the next request would use more than this fraction of the context window (0 = never). */
  readonly at?: number;
  /** Turns a summary keeps verbatim. */
  readonly keepRecentTurns?: number;
  /** Pruning replaces older tool outputs longer than this many characters by a stub. */
  readonly pruneMinChars?: number;
}

export interface AgentDefinition {
  /** How sessions choose it: 1-63 of [a-z0-9-], starting with a letter. */
  readonly name: string;
  /** One line for listings (`dh agents ls`, the console). */
  readonly description?: string;
  /** The system prompt. */
  readonly instructions: string;
  /** A model the worker's endpoint serves; default: the worker's (DH_MODEL). */
  readonly model?: string;
  readonly temperature?: number;
  /** The answer's output limit (`max_tokens`). */
  readonly maxTokens?: number;
  /** Its tools, in the order the model sees them (`defineTool`, `builtinTools()`). */
  readonly tools?: readonly ToolDefinition[];
  /** Plugins of this agent only (request waterfall, pre-step, approval gate, notices, observers). */
  readonly plugins?: readonly Plugin[];
  /** Tool names that run without asking, ask first (the `approve` update), or never run. */
  readonly policy?: Pick<ApprovalPolicy, 'allow' | 'ask' | 'deny'>;
  /** Its sessions' limits (a session's own limits win over these). */
  readonly limits?: Partial<Omit<SessionLimits, 'compactAt' | 'keepRecentTurns' | 'pruneMinChars'>>;
  readonly compaction?: AgentCompaction;
  /**
   * A label of your own that joins the version: bump it when a tool's or plugin's behaviour changes and its
   * schema does not (code is not digested, only what the model and the policy see).
   */
  readonly revision?: string;
}

/** A checked agent definition with its version. */
export interface Agent extends AgentDefinition {
  /** The first 12 hex digits of the sha256 of the definition's canonical form (see `agentVersion`). */
  readonly version: string;
  readonly tools: readonly ToolDefinition[];
  readonly plugins: readonly Plugin[];
}

const Definition = z.strictObject({
  name: z.string().regex(AGENT_NAME_PATTERN, 'an agent name: 1-63 of a-z, 0-9 and -, starting with a letter'),
  description: z.string().max(500).optional(),
  instructions: z.string().min(1, 'instructions: the system prompt, not empty'),
  model: z.string().min(1).optional(),
  temperature: z.number().min(0).max(2).optional(),
  maxTokens: z.number().int().positive().optional(),
  tools: z.array(z.custom<ToolDefinition>(isTool, 'a tool (defineTool)')).optional(),
  plugins: z.array(z.custom<Plugin>(isPlugin, 'a plugin ({ name, ...hooks })')).optional(),
  policy: z
    .strictObject({
      allow: z.array(z.string().min(1)).optional(),
      ask: z.array(z.string().min(1)).optional(),
      deny: z.array(z.string().min(1)).optional(),
    })
    .optional(),
  limits: z
    .strictObject({
      maxStepsPerTurn: z.number().int().positive().optional(),
      maxSessionSteps: z.number().int().positive().optional(),
      maxTurnTokens: z.number().int().positive().optional(),
      maxSessionTokens: z.number().int().positive().optional(),
      maxTurnMs: z.number().int().positive().optional(),
      approvalTimeoutMs: z.number().int().positive().optional(),
    })
    .optional(),
  compaction: z
    .strictObject({
      at: z.number().min(0).max(1).optional(),
      keepRecentTurns: z.number().int().nonnegative().optional(),
      pruneMinChars: z.number().int().positive().optional(),
    })
    .optional(),
  revision: z.string().max(100).optional(),
});

/** Checks an agent definition and gives it its version. Throws INVALID_AGENT naming the field. */
export function defineAgent(definition: AgentDefinition): Agent {
  if (typeof definition === 'object' && definition !== null && 'provider' in definition) {
    // Another endpoint needs its own key, limiter account and prices: a worker per provider, for now.
    throw new DhError(
      InvalidAgentCode,
      `invalid agent "${String(definition.name)}": provider: an agent runs on its worker's endpoint (DH_PROVIDER, ` +
        'DH_BASE_URL) and may name any model it serves; run a worker per provider for agents of another one',
      { field: 'provider' },
    );
  }
  const parsed = Definition.safeParse(definition);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.map(String).join('.') || 'definition';
    const name = typeof definition?.name === 'string' ? ` "${definition.name}"` : '';
    throw new DhError(InvalidAgentCode, `invalid agent${name}: ${field}: ${issue?.message ?? 'invalid'}`, { field });
  }
  const tools = [...(definition.tools ?? [])];
  const seen = new Set<string>();
  for (const tool of tools) {
    if (seen.has(tool.schema.name)) {
      throw new DhError(
        InvalidAgentCode,
        `invalid agent "${definition.name}": two tools are named "${tool.schema.name}"`,
        {
          field: 'tools',
        },
      );
    }
    seen.add(tool.schema.name);
  }
  const agent = { ...definition, tools, plugins: [...(definition.plugins ?? [])] };
  return Object.freeze({ ...agent, version: agentVersion(agent) });
}

/**
 * The version of a definition: what the model sees (instructions, model, sampling, each tool's schema and
 * run-again flags), what decides over calls (policy, plugin names), limits, compaction and the revision label.
 */
export function agentVersion(agent: Omit<Agent, 'version'>): string {
  return versionDigest({
    name: agent.name,
    description: agent.description,
    instructions: agent.instructions,
    model: agent.model,
    temperature: agent.temperature,
    maxTokens: agent.maxTokens,
    tools: agent.tools.map((tool) => ({
      schema: tool.schema,
      idempotent: tool.idempotent,
      readOnly: tool.readOnly,
      quick: tool.quick,
      concurrencySafe: tool.concurrencySafe,
    })),
    plugins: agent.plugins.map((plugin) => [plugin.name, plugin.policyVersion]),
    policy: agent.policy,
    limits: agent.limits,
    compaction: agent.compaction,
    revision: agent.revision,
  });
}

/** An agent version: the first 12 hex digits of the sha256 of `value`'s canonical JSON (undefined fields dropped). */
export function versionDigest(value: unknown): string {
  const canonical = canonicalJson(JSON.parse(JSON.stringify(value)));
  return sha256Digest(canonical)
    .replace(/^sha256:/, '')
    .slice(0, 12);
}

function isTool(value: unknown): boolean {
  const tool = value as ToolDefinition | null;
  return (
    typeof tool === 'object' &&
    tool !== null &&
    typeof tool.run === 'function' &&
    typeof tool.schema?.name === 'string' &&
    typeof tool.idempotent === 'boolean'
  );
}

function isPlugin(value: unknown): boolean {
  return typeof value === 'object' && value !== null && typeof (value as Plugin).name === 'string';
}
