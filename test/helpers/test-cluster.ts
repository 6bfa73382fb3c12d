// A production-shaped Temporal cluster for one test file or benchmark: temporal-server on fresh databases
// of the run's PostgreSQL (persistence, visibility, and a session store of its own), started from
// deploy/temporal exactly as docs/deploy.md describes, and everything dropped again at the end.
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import {
  createClusterSchemas,
  startTemporalCluster,
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

/**
 * `postgresUrl` is the run's PostgreSQL (any database on it: the admin connection goes to `postgres`);
 * `name` tags the databases (`t_<name>_<random>`, its `_visibility`, and `dh_<name>_<random>`).
 */
export async function startTestCluster(
  binaries: TemporalServerBinaries,
  postgresUrl: string,
  name: string,
): Promise<TestCluster> {
  const url = new URL(postgresUrl);
  const suffix = `${name.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${randomBytes(3).toString('hex')}`;
  const temporalDb = `t_${suffix}`;
  const storeDb = `dh_${suffix}`;
  const admin = (database: string) => {
    const adminUrl = new URL(postgresUrl);
    adminUrl.pathname = `/${database}`;
    return adminUrl.toString();
  };
  const db = {
    address: `${url.hostname}:${url.port || '5432'}`,
    user: decodeURIComponent(url.username || 'postgres'),
    password: decodeURIComponent(url.password),
    database: temporalDb,
  };
  await createClusterSchemas(binaries.sqlTool, db);
  await query(admin('postgres'), `CREATE DATABASE ${storeDb}`);
  const logFile = join(tmpdir(), `dh-cluster-${suffix}.log`);
  const cluster = await startTemporalCluster({ binaries, db, logFile });
  return {
    cluster,
    storeUrl: admin(storeDb),
    logFile,
    dispose: async () => {
      await cluster.stop();
      for (const database of [temporalDb, `${temporalDb}_visibility`, storeDb]) {
        await query(admin('postgres'), `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
      }
    },
  };
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
