// The agent catalog of a PostgreSQL store: the `dh_agents` table, shared by every worker of the fleet. Times are
// the database's clock, so a worker whose clock runs behind is not listed as gone (nor a dead one as alive).
import { createRequire } from 'node:module';
import type pg from 'pg';
import { createSchemaUnderLock, inTransaction } from '../stores/pg-transaction.js';
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

/** `pg`, loaded only when a PostgreSQL catalog is opened (it costs every SQLite CLI start ~40 ms). */
const loadPg = (): typeof pg => createRequire(import.meta.url)('pg') as typeof pg;

const SCHEMA_LOCK_KEY = 0x64685f61; // "dh_a"
const SCHEMA = `
CREATE TABLE IF NOT EXISTS dh_agents (
  instance_id TEXT COLLATE "C" NOT NULL,
  task_queue TEXT COLLATE "C" NOT NULL,
  host_id TEXT NOT NULL,
  pid INTEGER NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  version TEXT COLLATE "C" NOT NULL,
  description TEXT,
  model TEXT NOT NULL,
  tools JSONB NOT NULL,
  is_default BOOLEAN NOT NULL,
  seen_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (instance_id, name)
);
CREATE INDEX IF NOT EXISTS dh_agents_by_queue ON dh_agents (task_queue, seen_at);
`;
/** Rows seen within the TTL ($1, in milliseconds) by the database's clock. */
const LIVE = `seen_at >= clock_timestamp() - make_interval(secs => $1::double precision / 1000)`;

interface PgRow {
  instance_id: string;
  task_queue: string;
  host_id: string;
  pid: number;
  name: string;
  version: string;
  description: string | null;
  model: string;
  tools: string[];
  is_default: boolean;
  seen_ms: number;
}

export class PostgresAgentCatalog implements AgentCatalog {
  readonly ttlMs: number;
  readonly #pool: pg.Pool;

  private constructor(pool: pg.Pool, ttlMs: number) {
    this.#pool = pool;
    this.ttlMs = ttlMs;
  }

  static async open(
    connectionString: string,
    options: AgentCatalogOptions & { poolSize?: number } = {},
  ): Promise<PostgresAgentCatalog> {
    const Pool = loadPg().Pool;
    // Two connections: a refresh every few seconds and the odd listing need no more from every worker.
    // A bounded wait for a connection: a worker's close() waits for a refresh in flight, never for ever.
    const pool = new Pool({ connectionString, max: options.poolSize ?? 2, connectionTimeoutMillis: 10_000 });
    pool.on('error', () => {}); // a dead idle connection is replaced on the next checkout
    await createSchemaUnderLock(pool, SCHEMA_LOCK_KEY, SCHEMA);
    return new PostgresAgentCatalog(pool, options.ttlMs ?? AGENT_CATALOG_TTL_MS);
  }

  publish(worker: CatalogWorker, agents: readonly PublishedAgent[]): Promise<void> {
    return inTransaction(this.#pool, async (client) => {
      await client.query('DELETE FROM dh_agents WHERE instance_id = $1', [worker.instanceId]);
      if (agents.length > 0) {
        await client.query(
          `INSERT INTO dh_agents (instance_id, task_queue, host_id, pid, name, version, description, model, tools,
             is_default, seen_at)
           SELECT $1, $2, $3, $4, a.name, a.version, a.description, a.model, a.tools, a.is_default, clock_timestamp()
           FROM jsonb_to_recordset($5::jsonb)
             AS a(name text, version text, description text, model text, tools jsonb, is_default boolean)`,
          [
            worker.instanceId,
            worker.taskQueue,
            worker.hostId,
            worker.pid,
            JSON.stringify(
              agents.map((agent) => ({
                name: agent.name,
                version: agent.version,
                description: agent.description ?? null,
                model: agent.model,
                tools: agent.tools,
                is_default: agent.isDefault,
              })),
            ),
          ],
        );
      }
      // Rows no listing shows any more go whenever some worker publishes: the table holds the live workers only.
      await client.query(`DELETE FROM dh_agents WHERE NOT (${LIVE})`, [this.ttlMs]);
    });
  }

  async unpublish(instanceId: string): Promise<void> {
    await this.#pool.query('DELETE FROM dh_agents WHERE instance_id = $1', [instanceId]);
  }

  async rows(query: CatalogQuery = {}): Promise<CatalogRow[]> {
    const onQueue = query.taskQueue !== undefined;
    const result = await this.#pool.query<PgRow>(
      `SELECT instance_id, task_queue, host_id, pid, name, version, description, model, tools, is_default,
         (extract(epoch from seen_at) * 1000)::double precision AS seen_ms
       FROM dh_agents WHERE ${LIVE}${onQueue ? ' AND task_queue = $2' : ''}`,
      onQueue ? [this.ttlMs, query.taskQueue] : [this.ttlMs],
    );
    return result.rows.map((row) => ({
      instanceId: row.instance_id,
      taskQueue: row.task_queue,
      hostId: row.host_id,
      pid: row.pid,
      name: row.name,
      version: row.version,
      ...(row.description !== null ? { description: row.description } : {}),
      model: row.model,
      tools: row.tools,
      isDefault: row.is_default,
      seenAt: row.seen_ms,
    }));
  }

  async list(query: CatalogQuery = {}): Promise<ListedAgent[]> {
    return groupCatalogRows(await this.rows(query));
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}
