// The agents one worker serves, by name, each with its own composed plugin hooks (its instructions, tools,
// policy and plugins over the worker-wide ones).
import { DEFAULT_AGENT_NAME, DhError, type CallConfig } from '../core/index.js';
import type { Plugin } from '../plugins/plugin.js';
import { createPluginRuntime, type PluginHooks } from '../plugins/plugin-runtime.js';
import { approvalPolicyPlugin, toolsPlugin } from '../plugins/basic-plugins.js';
import type { SessionLimits } from '../shared/session-workflow-input.js';
import type { Agent } from './define-agent.js';
import type { AgentDirectory, AgentEntry } from './agent-directory.js';

export { loggedAgent, resolveAgent, UnknownAgentCode } from './agent-directory.js';

/** An agent as a worker serves it: what the activities see, and the plugin hooks that run it. */
export interface ServedAgent extends AgentEntry {
  /** Every plugin its hooks run, the worker's included (the policy engine asks their evaluators). */
  readonly plugins: readonly Plugin[];
  readonly hooks: Required<PluginHooks>;
}

export type AgentRegistry = AgentDirectory<ServedAgent>;

/** What every agent of a worker shares: the call configuration its waterfall starts from, and worker-wide plugins. */
export interface AgentWorkerBase {
  readonly seed: CallConfig;
  /** After each agent's own (repeat guard, live stream, logging, telemetry). */
  readonly workerPlugins: readonly Plugin[];
  /**
   * The worker has a policy file: its rules decide what a tool that reaches beyond the workspace (an unsandboxed
   * shell) may do. Without one, such a tool asks unless an agent's policy allows it.
   */
  readonly policyFile?: boolean;
  readonly warn?: (message: string) => void;
}

/** An agent's plugin hooks: its tools and policy first, its plugins, then the worker's. */
export function serveAgent(agent: Agent, base: AgentWorkerBase): ServedAgent {
  const plugins: Plugin[] = [
    ...(agent.tools.length > 0 ? [toolsPlugin(`${agent.name}-tools`, agent.tools)] : []),
    approvalPolicyPlugin({ ...agent.policy, tools: base.policyFile === true ? [] : agent.tools }),
    ...agent.plugins,
    ...base.workerPlugins,
  ];
  const seed: CallConfig = {
    ...base.seed,
    ...(agent.model !== undefined ? { model: agent.model } : {}),
    ...(agent.temperature !== undefined ? { temperature: agent.temperature } : {}),
    ...(agent.maxTokens !== undefined ? { maxTokens: agent.maxTokens } : {}),
  };
  const hooks = createPluginRuntime({ plugins, seed, ...(base.warn ? { warn: base.warn } : {}) });
  const { compaction } = agent;
  const limits: Partial<SessionLimits> = {
    ...agent.limits,
    ...(compaction?.at !== undefined ? { compactAt: compaction.at } : {}),
    ...(compaction?.keepRecentTurns !== undefined ? { keepRecentTurns: compaction.keepRecentTurns } : {}),
    ...(compaction?.pruneMinChars !== undefined ? { pruneMinChars: compaction.pruneMinChars } : {}),
  };
  return {
    name: agent.name,
    version: agent.version,
    ...(agent.description !== undefined ? { description: agent.description } : {}),
    instructions: agent.instructions,
    model: seed.model,
    tools: hooks.tools,
    ...(Object.keys(limits).length > 0 ? { limits } : {}),
    plugins,
    hooks,
  };
}

export function agentRegistry(agents: readonly ServedAgent[], defaultAgent?: string): AgentRegistry {
  if (agents.length === 0) throw new DhError('INVALID_AGENT', 'a worker serves at least one agent');
  const byName = new Map<string, ServedAgent>();
  for (const agent of agents) {
    if (byName.has(agent.name)) throw new DhError('INVALID_AGENT', `two agents are named "${agent.name}"`);
    byName.set(agent.name, agent);
  }
  const chosen = defaultAgent ?? (byName.has(DEFAULT_AGENT_NAME) ? DEFAULT_AGENT_NAME : agents[0]!.name);
  if (!byName.has(chosen)) {
    throw new DhError('INVALID_AGENT', `the default agent "${chosen}" is not one of ${[...byName.keys()].join(', ')}`);
  }
  return { defaultAgent: chosen, get: (name) => byName.get(name), list: () => agents };
}
