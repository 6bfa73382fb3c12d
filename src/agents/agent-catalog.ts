// The agent catalog: each worker writes the agents it serves (one row per agent, refreshed while it runs) into
// the store it shares with the CLI and the console, so they can list what a session may choose. A row unseen
// for the TTL is dropped from the listing: a worker killed without closing ages out. Openers: open-agent-catalog.ts.

/** A row older than this is not listed (its worker stopped refreshing it: killed, hung, or cut off). */
export const AGENT_CATALOG_TTL_MS = 90_000;
/** How often a running worker refreshes its rows: several refreshes fit in one TTL, so one failed write loses none. */
export const AGENT_CATALOG_REFRESH_MS = 20_000;

/** One agent as a worker publishes it. */
export interface PublishedAgent {
  readonly name: string;
  readonly version: string;
  readonly description?: string;
  /** The model its requests name unless a session overrides it. */
  readonly model: string;
  /** Its tools' names, in the order the model sees them. */
  readonly tools: readonly string[];
  /** What this worker runs for a session that names no agent. */
  readonly isDefault: boolean;
}

/** The worker that publishes: its task queue, its host, its process, and a random id of this start. */
export interface CatalogWorker {
  readonly taskQueue: string;
  readonly hostId: string;
  readonly pid: number;
  /** New at every start: two workers in one process, or a pid reused after a restart, never share rows. */
  readonly instanceId: string;
}

/** A stored row: one agent of one worker, and when (epoch ms, the store's clock) that worker last published it. */
export interface CatalogRow extends PublishedAgent, CatalogWorker {
  readonly seenAt: number;
}

/** An agent as the catalog lists it: one name at one version on one task queue, and the live workers serving it. */
export interface ListedAgent {
  readonly taskQueue: string;
  readonly name: string;
  readonly version: string;
  readonly description: string | null;
  /** As the most recently seen of its workers publishes it (a worker's DH_MODEL is not part of the version). */
  readonly model: string;
  readonly tools: readonly string[];
  /** At least one of its workers runs it for a session that names no agent. */
  readonly default: boolean;
  readonly workers: number;
  readonly lastSeenAt: number;
}

export interface CatalogQuery {
  /** Only this task queue's agents (default: every queue's). */
  readonly taskQueue?: string;
}

export interface AgentCatalog {
  /** How long a row stays listed after its worker last published it. */
  readonly ttlMs: number;
  /** Replaces the worker's rows by `agents`, seen now (a refresh is the same call). */
  publish(worker: CatalogWorker, agents: readonly PublishedAgent[]): Promise<void>;
  /** Removes the worker's rows (its `close()`). */
  unpublish(instanceId: string): Promise<void>;
  /** The rows seen within the TTL, one per agent of each live worker. */
  rows(query?: CatalogQuery): Promise<CatalogRow[]>;
  /** The live rows grouped by (task queue, name, version): two versions of a name served at once are two entries. */
  list(query?: CatalogQuery): Promise<ListedAgent[]>;
  close(): Promise<void>;
}

export interface AgentCatalogOptions {
  /** Default AGENT_CATALOG_TTL_MS. */
  readonly ttlMs?: number;
}

/** The listing of live rows: by task queue and name, the most recently seen version of a name first. */
export function groupCatalogRows(rows: readonly CatalogRow[]): ListedAgent[] {
  const groups = new Map<string, CatalogRow[]>();
  for (const row of rows) {
    const key = JSON.stringify([row.taskQueue, row.name, row.version]);
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  const listed = [...groups.values()].map((group): ListedAgent => {
    const latest = group.reduce((a, b) => (b.seenAt > a.seenAt ? b : a));
    return {
      taskQueue: latest.taskQueue,
      name: latest.name,
      version: latest.version,
      description: latest.description ?? null,
      model: latest.model,
      tools: [...latest.tools],
      default: group.some((row) => row.isDefault),
      workers: new Set(group.map((row) => row.instanceId)).size,
      lastSeenAt: latest.seenAt,
    };
  });
  return listed.sort(
    (a, b) =>
      compare(a.taskQueue, b.taskQueue) ||
      compare(a.name, b.name) ||
      b.lastSeenAt - a.lastSeenAt ||
      compare(a.version, b.version),
  );
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
