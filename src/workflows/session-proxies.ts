// The activity proxies one run calls, made once at its start (activity-proxies.ts owns their options).
import {
  HOST_MODEL_START_TIMEOUT,
  localSessionActivities,
  modelActivities,
  sessionActivities,
  toolActivities,
} from './activity-proxies.js';

export interface SessionProxies {
  readonly session: ReturnType<typeof sessionActivities>;
  readonly local: ReturnType<typeof localSessionActivities>;
  readonly model: ReturnType<typeof modelActivities>;
  /** The model step on a host's model queue, bounded by HOST_MODEL_START_TIMEOUT (one proxy per queue). */
  readonly hostModel: (queue: string) => ReturnType<typeof modelActivities>;
  /** Made per tool phase, on the task queue of the session's host (known once the session is open). */
  readonly tools: typeof toolActivities;
}

export function sessionProxies(): SessionProxies {
  const onHosts = new Map<string, ReturnType<typeof modelActivities>>();
  return {
    session: sessionActivities(),
    local: localSessionActivities(),
    model: modelActivities(),
    hostModel: (queue) => {
      let proxy = onHosts.get(queue);
      if (!proxy) onHosts.set(queue, (proxy = modelActivities(queue, HOST_MODEL_START_TIMEOUT)));
      return proxy;
    },
    tools: toolActivities,
  };
}
