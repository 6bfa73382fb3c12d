// The audit's agent check: a log that names its agent (format 2) names it in every header too, each header
// records the overrides in force when it was composed, and applies them (model, sampling, output limit, tools,
// instructions). Version-1 logs name no agent; an eval's declared change and a subagent's narrowing are theirs.
import type { AgentOverrides, EventOf, RequestHeader, SessionEvent } from '../core/index.js';

export interface AgentCheck {
  /** The agent `session/start` names. */
  readonly name: string;
  /** The versions its headers record, oldest first (more than one: the agent was redeployed mid-session). */
  readonly versions: readonly string[];
  /** `agent/overrides` events logged. */
  readonly overrides: number;
  readonly problems: readonly string[];
}

/** Null for a log that names no agent. */
export function auditAgent(events: readonly SessionEvent[]): AgentCheck | null {
  const start = events[0];
  if (start?.type !== 'session/start' || start.agent === undefined) return null;
  const problems: string[] = [];
  const versions: string[] = [];
  let inForce: EventOf<'agent/overrides'> | undefined;
  let overrides = 0;
  for (const event of events) {
    if (event.type === 'agent/overrides') {
      inForce = event;
      overrides++;
      continue;
    }
    if (event.type !== 'request/header') continue;
    const at = `header ${event.turn}.${event.step} (seq ${event.seq})`;
    const agent = event.header.agent;
    if (agent === undefined) {
      problems.push(`${at}: names no agent, in a log of agent "${start.agent.name}"`);
      continue;
    }
    if (agent.name !== start.agent.name)
      problems.push(`${at}: agent "${agent.name}", the session runs "${start.agent.name}"`);
    if (!versions.includes(agent.version)) versions.push(agent.version);
    if (agent.overrides !== inForce?.overridesId) {
      problems.push(
        `${at}: records overrides ${agent.overrides ?? 'none'}, the log had ${inForce?.overridesId ?? 'none'} in force`,
      );
    }
    // An eval log's header is its declared change; a subagent's model and tools are what its parent gave it.
    if (start.eval === undefined && start.delegation === undefined && inForce !== undefined) {
      problems.push(...unapplied(inForce.overrides, event.header).map((p) => `${at}: ${p}`));
    }
  }
  return { name: start.agent.name, versions, overrides, problems };
}

/** What of `overrides` the header does not show. */
function unapplied(overrides: AgentOverrides, header: RequestHeader): string[] {
  const problems: string[] = [];
  const { config } = header;
  if (overrides.model !== undefined && config.model !== overrides.model)
    problems.push(`model ${config.model}, the overrides say ${overrides.model}`);
  if (overrides.temperature !== undefined && config.temperature !== overrides.temperature)
    problems.push(`temperature ${config.temperature ?? 'unset'}, the overrides say ${overrides.temperature}`);
  if (overrides.maxTokens !== undefined && config.maxTokens !== overrides.maxTokens)
    problems.push(`maxTokens ${config.maxTokens ?? 'unset'}, the overrides say ${overrides.maxTokens}`);
  const extra = (header.tools ?? []).map((t) => t.name).filter((name) => !(overrides.tools ?? [name]).includes(name));
  if (extra.length > 0) problems.push(`offers ${extra.join(', ')}, beyond the overrides' tools`);
  if (overrides.system !== undefined && !(header.system ?? '').startsWith(overrides.system))
    problems.push("its system prompt does not start with the overrides' instructions");
  if (overrides.systemAppend !== undefined && !(header.system ?? '').includes(overrides.systemAppend))
    problems.push("its system prompt lacks the overrides' addition");
  return problems;
}
