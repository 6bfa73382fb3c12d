// Picks the side channel that goes with a store spec, the way openSessionStore picks the store:
// postgres:// → a table with LISTEN/NOTIFY; a list of them (a sharded store) → that table on each session's
// shard; a SQLite path → a `.live.db` file next to it; `:memory:` → in-process only.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { MemoryDeltaChannel } from './memory-delta-channel.js';
import { PostgresDeltaChannel } from './postgres-delta-channel.js';
import { liveDeltaPathFor, SqliteDeltaChannel } from './sqlite-delta-channel.js';
import type { DeltaChannel } from './delta-channel.js';
import { ShardedDeltaChannel } from './sharded-delta-channel.js';
import { parseStoreSpec } from '../stores/store-spec.js';

export interface OpenDeltaChannelOptions {
  /** Where write failures go (publishing never throws into the model step). */
  readonly onError?: (error: unknown) => void;
}

/** Synchronous: PostgreSQL connects (and creates its table) on first use. */
export function openDeltaChannel(storeSpec: string, options: OpenDeltaChannelOptions = {}): DeltaChannel {
  const parsed = parseStoreSpec(storeSpec);
  const onError = options.onError !== undefined ? { onError: options.onError } : {};
  if (parsed.kind === 'sharded') {
    return new ShardedDeltaChannel(parsed.urls.map((url) => new PostgresDeltaChannel(url, onError)));
  }
  if (parsed.kind === 'postgres') return new PostgresDeltaChannel(parsed.url, onError);
  if (parsed.path === ':memory:') return new MemoryDeltaChannel();
  const path = liveDeltaPathFor(parsed.path);
  mkdirSync(dirname(path), { recursive: true });
  return SqliteDeltaChannel.open(path, onError);
}
