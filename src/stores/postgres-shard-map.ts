// Each shard database of a sharded store holds one row saying which map it belongs to and which shard of it
// it is. Written once, when the map is created; read and compared at every open, so a worker whose list of
// databases differs (order, count, another store's database) refuses to start instead of misrouting.
import pg from 'pg';
import { DhError } from '../core/errors.js';
import { SHARD_HASH } from '../core/shard-key.js';
import { inTransaction } from './pg-transaction.js';
import { redactUrl } from './store-spec.js';

/** The map's identity, as stored in every shard. */
export interface ShardMap {
  /** Chosen when shard 0 was first claimed; the same in every shard of the map. */
  readonly mapId: string;
  readonly count: number;
  /** The routing function's name (SHARD_HASH when written). */
  readonly hash: string;
  /** The shards' URLs without passwords, as the creating worker listed them (for messages). */
  readonly shards: readonly string[];
}

export interface StoredShard extends ShardMap {
  readonly index: number;
}

/** A worker's shard list does not match the map its databases hold. */
export const STORE_SHARD_MAP_MISMATCH = 'STORE_SHARD_MAP_MISMATCH';

const MAP_TABLE = `
CREATE TABLE IF NOT EXISTS dh_shard_map (
  singleton BOOLEAN NOT NULL PRIMARY KEY DEFAULT TRUE CHECK (singleton),
  map_id TEXT NOT NULL,
  shard_index INTEGER NOT NULL,
  shard_count INTEGER NOT NULL,
  hash TEXT NOT NULL,
  shards TEXT NOT NULL,
  created_at BIGINT NOT NULL
)`;

/** Serializes first claims of one database (the same key space as the session schema's lock, another key). */
const MAP_LOCK_KEY = 0x64685f6d; // "dh_m"

/**
 * This database's shard row; when it has none, claims it as shard `index` of `wanted`, unless it already
 * holds sessions (an unsharded store is not silently made a shard: its sessions would be routed elsewhere).
 */
export async function claimShard(url: string, index: number, wanted: ShardMap): Promise<StoredShard> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  pool.on('error', () => {});
  try {
    return await inTransaction(pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [MAP_LOCK_KEY]);
      await client.query(MAP_TABLE);
      const stored = await readRow(client);
      if (stored !== null) return stored;
      // Two statements: a query naming a missing table fails when it is planned, whatever its CASE says.
      const table = await client.query<{ t: string | null }>(`SELECT to_regclass('sessions')::text AS t`);
      const held =
        table.rows[0]?.t == null
          ? 0
          : Number((await client.query<{ n: string }>('SELECT count(*)::text AS n FROM sessions')).rows[0]?.n ?? 0);
      if (held > 0) {
        throw new DhError(
          STORE_SHARD_MAP_MISMATCH,
          `shard ${index} (${redactUrl(url)}) holds ${held} sessions but no shard map: it is an unsharded store ` +
            `(move its sessions with dh export / dh import, docs/deploy.md "Resharding")`,
          { shard: index, url: redactUrl(url), sessions: held },
        );
      }
      await client.query(
        `INSERT INTO dh_shard_map (map_id, shard_index, shard_count, hash, shards, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [wanted.mapId, index, wanted.count, wanted.hash, JSON.stringify(wanted.shards), Date.now()],
      );
      return { ...wanted, index };
    });
  } finally {
    await pool.end();
  }
}

async function readRow(client: pg.PoolClient): Promise<StoredShard | null> {
  const result = await client.query<{
    map_id: string;
    shard_index: number;
    shard_count: number;
    hash: string;
    shards: string;
  }>('SELECT map_id, shard_index, shard_count, hash, shards FROM dh_shard_map');
  const row = result.rows[0];
  if (row === undefined) return null;
  return {
    mapId: row.map_id,
    index: row.shard_index,
    count: row.shard_count,
    hash: row.hash,
    shards: JSON.parse(row.shards) as string[],
  };
}

/**
 * How shard `index` as stored differs from what this worker expects of it (empty: it matches). The stored
 * URLs are not compared: one database may be reached by several names; its map id and place identify it.
 */
export function shardDifferences(index: number, stored: StoredShard, expected: Omit<ShardMap, 'shards'>): string[] {
  const differences: string[] = [];
  if (stored.mapId !== expected.mapId) {
    differences.push(`it belongs to another sharded store (map ${stored.mapId}, not ${expected.mapId})`);
  }
  if (stored.index !== index) differences.push(`it is stored as shard ${stored.index}, not ${index}`);
  if (stored.count !== expected.count) {
    differences.push(`its map has ${stored.count} shards, this worker lists ${expected.count}`);
  }
  if (stored.hash !== expected.hash) {
    differences.push(`its map routes with ${stored.hash}, this worker with ${expected.hash}`);
  }
  return differences;
}

/** A new map for `urls` (its id is only used if shard 0 has none yet). */
export function newShardMap(urls: readonly string[], mapId: string): ShardMap {
  return { mapId, count: urls.length, hash: SHARD_HASH, shards: urls.map(redactUrl) };
}
