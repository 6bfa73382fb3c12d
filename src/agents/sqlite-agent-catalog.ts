// The agent catalog of a SQLite store, in a `.agents.db` file beside it (as the limiter and the live deltas keep
// theirs): rows every worker rewrites every few seconds stay out of the session store's write lock, its schema
// and its backups. Every worker process of the host and every `dh` command open the same file.
import type Database from 'better-sqlite3';
import { openSqliteSideFile } from '../stores/sqlite-side-file.js';
import {
  AGENT_CATALOG_TTL_MS,
  groupCatalogRows,
  type AgentCatalog,
  type AgentCatalogOptions,
  type CatalogQuery,
  type CatalogRow,
  type CatalogWorker,
  type ListedAgent,
  type PublishedAgent,
} from './agent-catalog.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS agent_catalog (
  instance_id TEXT NOT NULL,
  task_queue TEXT NOT NULL,
  host_id TEXT NOT NULL,
  pid INTEGER NOT NULL,
  name TEXT NOT NULL,
  version TEXT NOT NULL,
  description TEXT,
  model TEXT NOT NULL,
  tools TEXT NOT NULL,
  is_default INTEGER NOT NULL,
  seen_at REAL NOT NULL,
  PRIMARY KEY (instance_id, name)
);
CREATE INDEX IF NOT EXISTS agent_catalog_by_queue ON agent_catalog (task_queue, seen_at);
`;

/** `<store>.agents.db` beside `<store>.db` (or `<store>.agents.db` for a path without `.db`). */
export function agentCatalogPathFor(storePath: string): string {
  return storePath.endsWith('.db') ? `${storePath.slice(0, -3)}.agents.db` : `${storePath}.agents.db`;
}

interface Row {
  instance_id: string;
  task_queue: string;
  host_id: string;
  pid: number;
  name: string;
  version: string;
  description: string | null;
  model: string;
  tools: string;
  is_default: number;
  seen_at: number;
}

export class SqliteAgentCatalog implements AgentCatalog {
  readonly ttlMs: number;
  readonly #db: Database.Database;
  readonly #publish: (worker: CatalogWorker, agents: readonly PublishedAgent[]) => void;
  readonly #unpublish: Database.Statement<[string]>;
  readonly #live: Database.Statement<[number], Row>;
  readonly #liveOnQueue: Database.Statement<[number, string], Row>;

  private constructor(db: Database.Database, ttlMs: number) {
    this.#db = db;
    this.ttlMs = ttlMs;
    const remove = db.prepare<[string]>('DELETE FROM agent_catalog WHERE instance_id = ?');
    const insert = db.prepare(
      `INSERT INTO agent_catalog (instance_id, task_queue, host_id, pid, name, version, description, model, tools,
         is_default, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    // Rows no listing shows any more go whenever some worker publishes: the table holds the live workers only.
    const expire = db.prepare<[number]>('DELETE FROM agent_catalog WHERE seen_at < ?');
    const publish = db.transaction((worker: CatalogWorker, agents: readonly PublishedAgent[]) => {
      const now = Date.now();
      remove.run(worker.instanceId);
      for (const agent of agents) {
        insert.run(
          worker.instanceId,
          worker.taskQueue,
          worker.hostId,
          worker.pid,
          agent.name,
          agent.version,
          agent.description ?? null,
          agent.model,
          JSON.stringify(agent.tools),
          agent.isDefault ? 1 : 0,
          now,
        );
      }
      expire.run(now - this.ttlMs);
    });
    this.#publish = (worker, agents) => publish.immediate(worker, agents);
    this.#unpublish = remove;
    this.#live = db.prepare<[number], Row>('SELECT * FROM agent_catalog WHERE seen_at >= ?');
    this.#liveOnQueue = db.prepare<[number, string], Row>(
      'SELECT * FROM agent_catalog WHERE seen_at >= ? AND task_queue = ?',
    );
  }

  /** Opens (creating if needed) the catalog file at `path`; `:memory:` is one process's own. */
  static open(path: string, options: AgentCatalogOptions = {}): SqliteAgentCatalog {
    // Rows are rewritten every refresh: one lost to a crash is back within seconds, not worth an fsync.
    const db = openSqliteSideFile(path, SCHEMA);
    return new SqliteAgentCatalog(db, options.ttlMs ?? AGENT_CATALOG_TTL_MS);
  }

  publish(worker: CatalogWorker, agents: readonly PublishedAgent[]): Promise<void> {
    return attempt(() => this.#publish(worker, agents));
  }

  unpublish(instanceId: string): Promise<void> {
    return attempt(() => {
      this.#unpublish.run(instanceId);
    });
  }

  rows(query: CatalogQuery = {}): Promise<CatalogRow[]> {
    return attempt(() => {
      const since = Date.now() - this.ttlMs;
      const rows =
        query.taskQueue !== undefined ? this.#liveOnQueue.all(since, query.taskQueue) : this.#live.all(since);
      return rows.map(rowOf);
    });
  }

  async list(query: CatalogQuery = {}): Promise<ListedAgent[]> {
    return groupCatalogRows(await this.rows(query));
  }

  close(): Promise<void> {
    return attempt(() => {
      if (this.#db.open) this.#db.close();
    });
  }
}

function rowOf(row: Row): CatalogRow {
  return {
    instanceId: row.instance_id,
    taskQueue: row.task_queue,
    hostId: row.host_id,
    pid: row.pid,
    name: row.name,
    version: row.version,
    ...(row.description !== null ? { description: row.description } : {}),
    model: row.model,
    tools: JSON.parse(row.tools) as string[],
    isDefault: row.is_default === 1,
    seenAt: row.seen_at,
  };
}

/** The synchronous driver's answer (or throw) as a promise, like the PostgreSQL catalog's. */
function attempt<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
