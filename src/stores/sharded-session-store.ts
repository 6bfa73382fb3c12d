// The session store over several PostgreSQL databases (shards): each session lives on the shard its tree's
// root hashes to (core/shard-key.ts), so every operation on one session is one shard's, exactly as on a
// single database; listings fan out to every shard and merge. The shard map is checked at every open.
import { randomUUID } from 'node:crypto';
import { shardIndexOf, SHARD_HASH } from '../core/shard-key.js';
import { DhError } from '../core/errors.js';
import type { SessionEvent } from '../core/events.js';
import type { LogKey } from './log-key.js';
import type { StoredChain } from './log-chain.js';
import { PostgresSessionStore } from './postgres-session-store.js';
import {
  claimShard,
  newShardMap,
  shardDifferences,
  STORE_SHARD_MAP_MISMATCH,
  type ShardMap,
} from './postgres-shard-map.js';
import type {
  AppendResult,
  CreateSessionOptions,
  ListOptions,
  ReadOptions,
  SessionStore,
  SessionSummary,
} from './session-store.js';
import { compareListed } from './list-order.js';
import { redactUrl } from './store-spec.js';

export interface ShardedSessionStoreOptions {
  readonly logKey?: LogKey;
  /** Connections per shard (pg's default is 10). */
  readonly poolSize?: number;
}

export class ShardedSessionStore implements SessionStore {
  readonly map: ShardMap;
  private readonly shards: readonly PostgresSessionStore[];
  /** This process's shard URLs without passwords, for errors. */
  private readonly names: readonly string[];
  private closed = false;

  private constructor(map: ShardMap, shards: readonly PostgresSessionStore[], names: readonly string[]) {
    this.map = map;
    this.shards = shards;
    this.names = names;
  }

  /**
   * Checks the map (claiming unclaimed shards for it: shard 0 first, which fixes the map's id), then opens
   * every shard. A shard that belongs elsewhere, sits at another place or counts another number of shards is
   * STORE_SHARD_MAP_MISMATCH, naming every difference; nothing is written to the other shards then.
   */
  static async open(urls: readonly string[], options: ShardedSessionStoreOptions = {}): Promise<ShardedSessionStore> {
    const first = await claimShard(urls[0] ?? '', 0, newShardMap(urls, randomUUID()));
    const expected = { mapId: first.mapId, count: urls.length, hash: SHARD_HASH };
    const mismatch = (index: number, differences: string[]) =>
      `shard ${index} (${redactUrl(urls[index] ?? '')}): ${differences.join('; ')}`;
    const firstDifferences = shardDifferences(0, first, expected);
    if (firstDifferences.length > 0) throw mapMismatch(first, [mismatch(0, firstDifferences)]);
    const stored = await Promise.all(urls.slice(1).map((url, i) => claimShard(url, i + 1, first)));
    const problems = stored.flatMap((shard, i) => {
      const differences = shardDifferences(i + 1, shard, expected);
      return differences.length > 0 ? [mismatch(i + 1, differences)] : [];
    });
    if (problems.length > 0) throw mapMismatch(first, problems);
    const opened = await Promise.allSettled(
      urls.map((url) =>
        PostgresSessionStore.open(url, {
          ...(options.logKey !== undefined && { logKey: options.logKey }),
          ...(options.poolSize !== undefined && { poolSize: options.poolSize }),
        }),
      ),
    );
    const shards = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    const failed = opened.findIndex((o) => o.status === 'rejected');
    if (failed >= 0) {
      await Promise.all(shards.map((s) => s.close()));
      const reason: unknown = (opened[failed] as PromiseRejectedResult).reason;
      throw new Error(`shard ${failed} (${redactUrl(urls[failed] ?? '')}): ${String(reason)}`, { cause: reason });
    }
    return new ShardedSessionStore(first, shards, urls.map(redactUrl));
  }

  /** The shard `sessionId` lives on. */
  shardOf(sessionId: string): number {
    return shardIndexOf(sessionId, this.shards.length);
  }

  private on(sessionId: string): PostgresSessionStore {
    const shard = this.shards[this.shardOf(sessionId)];
    if (shard === undefined) throw new Error(`no shard for session "${sessionId}"`);
    return shard;
  }

  create(sessionId: string, options: CreateSessionOptions): Promise<{ created: boolean }> {
    return this.on(sessionId).create(sessionId, options);
  }

  append(sessionId: string, expectedSeq: number, events: readonly SessionEvent[]): Promise<AppendResult> {
    return this.on(sessionId).append(sessionId, expectedSeq, events);
  }

  read(sessionId: string, fromSeq?: number, toSeq?: number, options?: ReadOptions): Promise<SessionEvent[]> {
    return this.on(sessionId).read(sessionId, fromSeq, toSeq, options);
  }

  readChain(sessionId: string, fromSeq?: number, toSeq?: number): Promise<StoredChain> {
    return this.on(sessionId).readChain(sessionId, fromSeq, toSeq);
  }

  head(sessionId: string): Promise<number> {
    return this.on(sessionId).head(sessionId);
  }

  /**
   * Each shard's first `limit` in the listing's order, merged: the same page a single database would give.
   * A shard that cannot answer fails the listing, named: a partial list is never passed off as the whole.
   */
  async list(options?: ListOptions): Promise<SessionSummary[]> {
    const pages = await Promise.all(
      this.shards.map((shard, i) =>
        shard.list(options).catch((error: unknown) => {
          if (error instanceof DhError) throw error;
          const message = error instanceof Error ? error.message : String(error);
          throw new Error(`shard ${i} (${this.names[i]}) cannot list its sessions: ${message}`, { cause: error });
        }),
      ),
    );
    const merged = pages.flat().sort(compareListed);
    return options?.limit !== undefined ? merged.slice(0, options.limit) : merged;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.shards.map((shard) => shard.close()));
  }
}

function mapMismatch(stored: ShardMap, problems: readonly string[]): DhError {
  return new DhError(
    STORE_SHARD_MAP_MISMATCH,
    `the sharded store's databases do not match this worker's list: ${problems.join('; ')}. ` +
      `The stored map (${stored.count} shards, ${stored.hash}) lists, in order: ${stored.shards.join(' ')}`,
    { mapId: stored.mapId, problems: problems.join('; '), storedShards: stored.shards.join(' ') },
  );
}
