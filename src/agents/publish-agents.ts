// A worker's entry in the agent catalog: its agents written at start, refreshed on a timer while it runs, and
// removed when it closes. The catalog only informs (`dh agents ls`, `dh run --agent`, the console), so nothing
// here throws into the worker: a failure is logged once, and the next refresh tries again.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '../observability/logger.js';
import {
  AGENT_CATALOG_REFRESH_MS,
  type AgentCatalog,
  type CatalogWorker,
  type PublishedAgent,
} from './agent-catalog.js';
import type { AgentDirectory } from './agent-directory.js';
import { openAgentCatalog } from './open-agent-catalog.js';

export interface PublishAgentsOptions {
  /** The worker's store spec (DH_STORE): the catalog lives with it. */
  readonly store: string;
  readonly taskQueue: string;
  /** Default: the machine's host name. */
  readonly hostId?: string;
  readonly agents: AgentDirectory;
  readonly log: Pick<Logger, 'info' | 'warn'>;
  /** Default AGENT_CATALOG_REFRESH_MS; keep it well under the catalog's TTL. */
  readonly everyMs?: number;
  /** Default AGENT_CATALOG_TTL_MS. */
  readonly ttlMs?: number;
}

export interface AgentPublisher {
  readonly worker: CatalogWorker;
  /** Stops refreshing and removes this worker's rows; never rejects. */
  stop(): Promise<void>;
}

/** The agents of a directory as the catalog lists them. */
export function publishedAgents(agents: AgentDirectory): PublishedAgent[] {
  return agents.list().map((agent) => ({
    name: agent.name,
    version: agent.version,
    ...(agent.description !== undefined ? { description: agent.description } : {}),
    model: agent.model,
    tools: [...agent.tools.keys()],
    isDefault: agent.name === agents.defaultAgent,
  }));
}

/** Publishes once (awaited, so a worker that reports ready is listed), then every `everyMs` until `stop()`. */
export async function publishAgents(options: PublishAgentsOptions): Promise<AgentPublisher> {
  const worker: CatalogWorker = {
    taskQueue: options.taskQueue,
    hostId: options.hostId ?? hostname(),
    pid: process.pid,
    instanceId: randomUUID(),
  };
  const agents = publishedAgents(options.agents);
  const everyMs = options.everyMs ?? AGENT_CATALOG_REFRESH_MS;
  let catalog: AgentCatalog | null = null;
  let failing = false;
  let stopped = false;

  const publish = async (): Promise<void> => {
    try {
      catalog ??= await openAgentCatalog(options.store, options.ttlMs !== undefined ? { ttlMs: options.ttlMs } : {});
      await catalog.publish(worker, agents);
      if (failing) options.log.info('agent catalog: this worker is published again');
      failing = false;
    } catch (error) {
      // Once per run of failures: a store that is down for minutes would otherwise log every refresh.
      if (!failing) {
        options.log.warn(
          `agent catalog: could not publish this worker's agents (${message(error)}); retrying every ` +
            `${Math.round(everyMs / 1000)} s, and dh agents ls may not list them meanwhile`,
        );
      }
      failing = true;
    }
  };

  await publish();
  let inFlight: Promise<void> | null = null;
  const timer = setInterval(() => {
    // A refresh still running when the next is due (a slow store) is not queued behind: that one is skipped.
    if (inFlight !== null || stopped) return;
    inFlight = publish().finally(() => {
      inFlight = null;
    });
  }, everyMs);
  // The timer alone does not keep a process alive whose worker has stopped.
  timer.unref();

  return {
    worker,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      await inFlight;
      if (catalog === null) return;
      await catalog.unpublish(worker.instanceId).catch((error: unknown) => {
        options.log.warn(`agent catalog: could not remove this worker's agents (${message(error)}); they age out`);
      });
      await catalog.close().catch(() => undefined);
    },
  };
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
