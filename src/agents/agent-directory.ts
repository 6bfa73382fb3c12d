// What the session activities know of the agents a worker serves — names, versions, tools, limits — and which
// one a session's log names. The plugin hooks that run them live in agent-registry.ts.
import { DhError, type AgentRef, type SessionEvent } from '../core/index.js';
import type { ToolDefinition } from '../plugins/contracts.js';
import type { SessionLimits } from '../shared/session-limits.js';

export const UnknownAgentCode = 'UNKNOWN_AGENT';

/** An agent as the activities see it. */
export interface AgentEntry {
  readonly name: string;
  readonly version: string;
  readonly description?: string;
  /** Its instructions (the system prompt before plugins' parts); absent for a plain plugin list. */
  readonly instructions?: string;
  /** The model its requests name unless a session overrides it. */
  readonly model: string;
  /** Its tools by name, in the order the model sees them. */
  readonly tools: ReadonlyMap<string, ToolDefinition>;
  readonly limits?: Partial<SessionLimits>;
}

export interface AgentDirectory<A extends AgentEntry = AgentEntry> {
  /** What a session runs when it names none (and what a version-1 log ran). */
  readonly defaultAgent: string;
  get(name: string): A | undefined;
  list(): readonly A[];
}

/** The agent `name` (the default when undefined), or UNKNOWN_AGENT naming the ones served. */
export function resolveAgent<A extends AgentEntry>(directory: AgentDirectory<A>, name: string | undefined): A {
  const agent = directory.get(name ?? directory.defaultAgent);
  if (agent) return agent;
  const served = directory.list().map((a) => a.name);
  throw new DhError(UnknownAgentCode, `no agent named "${name}" on this worker; it serves ${served.join(', ')}`, {
    agent: name ?? null,
    served: served.join(','),
  });
}

/** The agent a log's `session/start` names (undefined: a version-1 log, or none recorded). */
export function loggedAgent(events: readonly SessionEvent[]): AgentRef | undefined {
  const start = events[0];
  return start?.type === 'session/start' ? start.agent : undefined;
}
