// configureSession: logs a session's new overrides of its agent (the `configure` update), after checking them
// against that agent and this worker's endpoint. They take effect at the session's next step.
import { DhError } from '../core/index.js';
import type { ConfigureSessionInput, ConfigureSessionOutcome } from '../shared/activity-contracts.js';
import { loggedAgent, resolveAgent } from '../agents/agent-directory.js';
import { latestOverrides, sameOverrides } from '../agents/agent-hooks.js';
import { checkOverrides } from '../agents/check-overrides.js';
import type { ActivityContext } from './activity-context.js';

export async function configureSession(
  context: ActivityContext,
  input: ConfigureSessionInput,
): Promise<ConfigureSessionOutcome> {
  const { cache, runtime } = context;
  return context.guarded(input.sessionId, async () => {
    if (!runtime.agents) {
      throw new DhError('AGENTS_UNAVAILABLE', 'this worker serves no agents, so a session has nothing to override', {
        sessionId: input.sessionId,
      });
    }
    let session = await cache.load(input.sessionId);
    const agent = resolveAgent(runtime.agents, loggedAgent(session.events)?.name);
    const overrides = checkOverrides(agent, runtime.profile, input.overrides);
    const latest = latestOverrides(session.events);
    // A retry of this update finds its own set logged; a set equal to the one in force logs nothing.
    const logged = latest?.overridesId === input.overridesId;
    const same = sameOverrides(latest?.overrides ?? {}, overrides);
    if (!logged && !same) {
      session = await cache.append(session, [
        {
          type: 'agent/overrides',
          at: input.at,
          overridesId: input.overridesId,
          overrides,
          ...(input.source !== undefined ? { source: input.source } : {}),
        },
      ]);
    }
    return { ...(await context.outcome(session, input.knownHead)), overrides, changed: logged || !same };
  });
}
