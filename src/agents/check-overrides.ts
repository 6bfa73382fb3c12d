// A session's overrides checked against its agent and the worker's endpoint before they are logged: a model the
// endpoint does not serve, or a tool the agent does not have, is refused with what is there instead.
import { AgentOverrides, DhError } from '../core/index.js';
import { modelEntry } from '../config/worker-profile.js';
import type { ProviderProfile } from '../providers/provider-profiles.js';
import type { AgentEntry } from './agent-directory.js';

export const InvalidOverridesCode = 'INVALID_OVERRIDES';

export function checkOverrides(agent: AgentEntry, profile: ProviderProfile, overrides: unknown): AgentOverrides {
  const parsed = AgentOverrides.safeParse(overrides);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.map(String).join('.') || 'overrides';
    throw new DhError(InvalidOverridesCode, `invalid overrides: ${field}: ${issue?.message ?? 'invalid'}`, { field });
  }
  const value = parsed.data;
  if (value.model !== undefined && modelEntry(profile, value.model) === undefined) {
    const served = profile.models.map((m) => m.id);
    throw new DhError(
      InvalidOverridesCode,
      `the endpoint of this worker (${profile.name}) does not serve the model "${value.model}"; it serves ${served.join(', ')}`,
      { field: 'model', model: value.model, served: served.join(',') },
    );
  }
  const unknown = (value.tools ?? []).filter((name) => !agent.tools.has(name));
  if (unknown.length > 0) {
    throw new DhError(
      InvalidOverridesCode,
      `the agent "${agent.name}" has no tool ${unknown.map((n) => `"${n}"`).join(', ')}; its tools are ${[...agent.tools.keys()].join(', ') || 'none'}`,
      { field: 'tools', agent: agent.name },
    );
  }
  return value;
}
