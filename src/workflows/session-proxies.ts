// The activity proxies one run calls, made once at its start (activity-proxies.ts owns their options).
import { localSessionActivities, modelActivities, sessionActivities, toolActivities } from './activity-proxies.js';

export interface SessionProxies {
  readonly session: ReturnType<typeof sessionActivities>;
  readonly local: ReturnType<typeof localSessionActivities>;
  readonly model: ReturnType<typeof modelActivities>;
  /** Made per tool phase, on the task queue of the session's host (known once the session is open). */
  readonly tools: typeof toolActivities;
}

export function sessionProxies(): SessionProxies {
  return {
    session: sessionActivities(),
    local: localSessionActivities(),
    model: modelActivities(),
    tools: toolActivities,
  };
}
