// A production-shaped Temporal cluster for one test file or benchmark: temporal-server on fresh databases
// of the run's PostgreSQL (persistence, visibility, and a session store of its own), started from
// deploy/temporal as docs/deploy.md describes, and everything dropped again at the end.
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import {
  createClusterSchemas,
  startTemporalCluster,
  type ClusterDatabase,
  type TemporalCluster,
} from '../../src/local-stack/temporal-cluster.js';
import type { TemporalServerBinaries } from '../../src/local-stack/temporal-server-binaries.js';

export interface TestCluster {
  readonly cluster: TemporalCluster;
  /** A `postgresql://` URL of a session-store database of this cluster's own. */
  readonly storeUrl: string;
  /** Where the server's output goes. */
  readonly logFile: string;
  /** Stops the server and drops its databases. */
  dispose(): Promise<void>;
}

/** The names of one cluster's three databases on the run's PostgreSQL (none of them created yet). */
export interface ClusterDatabases {
  /** Temporal's persistence database (its visibility is `${db.database}_visibility`) and how to reach it. */
  readonly db: ClusterDatabase;
  /** The session store's database, and a `postgresql://` URL of it. */
  readonly storeDb: string;
  readonly storeUrl: string;
  /** `t_<name>_<random>`: tags the log file too. */
  readonly suffix: string;
  /** Drops all three (those that exist), even while something is still connected. */
  drop(): Promise<void>;
}

/**
 * `postgresUrl` is the run's PostgreSQL (any database on it: the admin connection goes to `postgres`);
 * `name` tags the databases (`t_<name>_<random>`, its `_visibility`, and `dh_<name>_<random>`).
 */
export function clusterDatabases(postgresUrl: string, name: string): ClusterDatabases {
  const url = new URL(postgresUrl);
  const suffix = `${name.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${randomBytes(3).toString('hex')}`;
  const temporalDb = `t_${suffix}`;
  const storeDb = `dh_${suffix}`;
  return {
    db: {
      address: `${url.hostname}:${url.port || '5432'}`,
      user: decodeURIComponent(url.username || 'postgres'),
      password: decodeURIComponent(url.password),
      database: temporalDb,
    },
    storeDb,
    storeUrl: databaseUrl(postgresUrl, storeDb),
    suffix,
    drop: async () => {
      for (const database of [temporalDb, `${temporalDb}_visibility`, storeDb]) {
        await query(databaseUrl(postgresUrl, 'postgres'), `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(
          () => undefined,
        );
      }
    },
  };
}

export async function startTestCluster(
  binaries: TemporalServerBinaries,
  postgresUrl: string,
  name: string,
): Promise<TestCluster> {
  const databases = clusterDatabases(postgresUrl, name);
  await createClusterSchemas(binaries.sqlTool, databases.db);
  await query(databaseUrl(postgresUrl, 'postgres'), `CREATE DATABASE ${databases.storeDb}`);
  const logFile = join(tmpdir(), `dh-cluster-${databases.suffix}.log`);
  const cluster = await startTemporalCluster({ binaries, db: databases.db, logFile });
  return {
    cluster,
    storeUrl: databases.storeUrl,
    logFile,
    dispose: async () => {
      await cluster.stop();
      await databases.drop();
    },
  };
}

/** `postgresUrl` pointed at `database` on the same server. */
export function databaseUrl(postgresUrl: string, database: string): string {
  const url = new URL(postgresUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

async function query(connectionString: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
