// The session runtime's hooks on a worker of several agents: each call goes to the agent the session's log
// names. The header is that agent's composition with the session's overrides applied and the agent recorded;
// the prefix is composed again when the agent's version or the overrides in force changed since the last header.
import { canonicalJson, type AgentOverrides, type RequestHeader, type SessionEvent } from '../core/index.js';
import type { HeaderContext } from '../activities/session-runtime.js';
import type { StepContext, ToolDefinition } from '../plugins/contracts.js';
import type { PluginHooks } from '../plugins/plugin-runtime.js';
import { loggedAgent, resolveAgent, type AgentRegistry, type ServedAgent } from './agent-registry.js';

/** The agent hooks plus, per session, the tools its agent serves. */
export interface AgentHooks extends Required<PluginHooks> {
  /** The tools the session's agent serves (its log's `session/start` names it). */
  toolsOf(events: readonly SessionEvent[]): ReadonlyMap<string, ToolDefinition>;
}

export function agentHooks(registry: AgentRegistry): AgentHooks {
  const of = (events: readonly SessionEvent[]): ServedAgent => resolveAgent(registry, loggedAgent(events)?.name);
  // Every agent's tools, for what asks the worker as a whole (the delegation depth); the first agent's wins a name.
  const tools = new Map<string, ToolDefinition>();
  for (const agent of registry.list())
    for (const [name, tool] of agent.tools) if (!tools.has(name)) tools.set(name, tool);
  return {
    tools,
    toolsOf: (events) => of(events).tools,
    composeHeader: (context) => composeAgentHeader(of(context.events), context),
    preStep: (batch, context) => of(context.events).hooks.preStep(batch, context),
    toolBefore: (call, context) => of(context.events).hooks.toolBefore(call, context),
    onRequest: (request, context) => of(context.events).hooks.onRequest(request, context),
    onStreamDelta: (delta, context) => observe(context, (agent) => agent.hooks.onStreamDelta(delta, context)),
    onModelCall: (report, context) => observe(context, (agent) => agent.hooks.onModelCall(report, context)),
    onToolProgress: (report, context) => observe(context, (agent) => agent.hooks.onToolProgress(report, context)),
    onLimiterWait: (report, context) => observe(context, (agent) => agent.hooks.onLimiterWait(report, context)),
    afterTools: (context) => of(context.events).hooks.afterTools(context),
    judges: uniqueJudges(registry),
  };

  /** Observers never throw: a session whose agent this worker no longer serves is not observed. */
  function observe(context: StepContext, call: (agent: ServedAgent) => void): void {
    const agent = registry.get(loggedAgent(context.events)?.name ?? registry.defaultAgent);
    if (agent) call(agent);
  }
}

/** The agent's header for this step, the session's overrides applied, the agent recorded. */
async function composeAgentHeader(agent: ServedAgent, context: HeaderContext): Promise<RequestHeader> {
  const latest = latestOverrides(context.events);
  const current = context.current;
  const recompose =
    context.firstOfInstance ||
    current === undefined ||
    current.agent?.name !== agent.name ||
    current.agent.version !== agent.version ||
    current.agent.overrides !== latest?.overridesId;
  const composed = await agent.hooks.composeHeader({ ...context, firstOfInstance: recompose });
  const overrides = latest?.overrides ?? {};
  // Composed again, the system prompt is the agent's instructions (or the session's own), its addition, then the
  // plugins' parts; within an instance it stays the one the header recorded, overrides included.
  // An agent that is only a plugin list has no instructions apart from its plugins' parts: `system` replaces them.
  const system = !recompose
    ? composed.system
    : agent.instructions === undefined && overrides.system !== undefined
      ? joinParts([overrides.system, overrides.systemAppend])
      : joinParts([overrides.system ?? agent.instructions, overrides.systemAppend, composed.system]);
  const config = {
    ...composed.config,
    ...(overrides.model !== undefined ? { model: overrides.model } : {}),
    ...(overrides.temperature !== undefined ? { temperature: overrides.temperature } : {}),
    ...(overrides.maxTokens !== undefined ? { maxTokens: overrides.maxTokens } : {}),
  };
  const kept = overrides.tools ? new Set(overrides.tools) : null;
  const tools = kept ? composed.tools?.filter((tool) => kept.has(tool.name)) : composed.tools;
  const { system: _system, tools: _tools, ...rest } = composed;
  return {
    ...rest,
    config,
    ...(system !== undefined ? { system } : {}),
    ...(tools !== undefined && tools.length > 0 ? { tools } : {}),
    agent: { name: agent.name, version: agent.version, ...(latest ? { overrides: latest.overridesId } : {}) },
  };
}

/** The overrides in force: the latest `agent/overrides` of the log, with its seq. */
export function latestOverrides(
  events: readonly SessionEvent[],
): { readonly overridesId: string; readonly overrides: AgentOverrides } | null {
  const last = events.findLast((e) => e.type === 'agent/overrides');
  return last?.type === 'agent/overrides' ? { overridesId: last.overridesId, overrides: last.overrides } : null;
}

function joinParts(parts: readonly (string | undefined)[]): string | undefined {
  const present = parts.filter((part): part is string => part !== undefined && part !== '');
  return present.length > 0 ? present.join('\n\n') : undefined;
}

/** Each judge name once (agents sharing a worker-wide plugin share its judge). */
function uniqueJudges(registry: AgentRegistry): Required<PluginHooks>['judges'] {
  const seen = new Map<string, Required<PluginHooks>['judges'][number]>();
  for (const agent of registry.list())
    for (const judge of agent.hooks.judges) if (!seen.has(judge.name)) seen.set(judge.name, judge);
  return [...seen.values()];
}

/** True when two overrides sets are the same (an update that changes nothing logs nothing). */
export function sameOverrides(a: AgentOverrides, b: AgentOverrides): boolean {
  return canonicalJson(a) === canonicalJson(b);
}
