// What the CLI reads of the agent catalog before it starts a session on a named agent: a name no live worker on
// the task queue serves is a usage error naming the ones served, before anything is sent; and the line that says
// no worker has published any (with how to start one), which `dh agents ls` prints too.
import { AGENT_CATALOG_TTL_MS } from '../agents/agent-catalog.js';
import { openAgentCatalog } from '../agents/open-agent-catalog.js';
import { usageError } from './exit-codes.js';

/** No live worker listed (on `taskQueue`, when given), and how to start one. */
export function noLiveAgentsLine(taskQueue?: string): string {
  const where = taskQueue !== undefined ? ` on task queue "${taskQueue}"` : '';
  return (
    `no live worker${where} has published its agents (workers list theirs while they run; none seen within ` +
    `${AGENT_CATALOG_TTL_MS / 1000} s); start one with: dh worker --agents ./agents.ts`
  );
}

/** Resolves when a live worker on `taskQueue` serves `agent`; a usage error naming what is served otherwise. */
export async function refuseUnservedAgent(storeSpec: string, taskQueue: string, agent: string): Promise<void> {
  const catalog = await openAgentCatalog(storeSpec);
  let served: string[];
  try {
    served = [...new Set((await catalog.list({ taskQueue })).map((listed) => listed.name))];
  } finally {
    await catalog.close();
  }
  if (served.includes(agent)) return;
  if (served.length === 0) throw usageError(`no agent "${agent}": ${noLiveAgentsLine(taskQueue)}`);
  throw usageError(
    `no live worker on task queue "${taskQueue}" serves the agent "${agent}"; they serve ${served.join(', ')} ` +
      '(dh agents ls)',
  );
}
