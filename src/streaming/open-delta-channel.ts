// Picks the side channel that goes with a store spec, the way openSessionStore picks the store:
// postgres:// → a table with LISTEN/NOTIFY; a SQLite path → a `.live.db` file next to it; `:memory:` →
// in-process only.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { MemoryDeltaChannel } from './memory-delta-channel.js';
import { PostgresDeltaChannel } from './postgres-delta-channel.js';
import { liveDeltaPathFor, SqliteDeltaChannel } from './sqlite-delta-channel.js';
import type { DeltaChannel } from './delta-channel.js';

export interface OpenDeltaChannelOptions {
  /** Where write failures go (publishing never throws into the model step). */
  readonly onError?: (error: unknown) => void;
}

/** Synchronous: PostgreSQL connects (and creates its table) on first use. */
export function openDeltaChannel(storeSpec: string, options: OpenDeltaChannelOptions = {}): DeltaChannel {
  const spec = storeSpec.trim();
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(spec)?.[1]?.toLowerCase();
  const onError = options.onError !== undefined ? { onError: options.onError } : {};
  if (scheme === 'postgres' || scheme === 'postgresql') return new PostgresDeltaChannel(spec, onError);
  if (spec === ':memory:') return new MemoryDeltaChannel();
  const path = liveDeltaPathFor(spec);
  mkdirSync(dirname(path), { recursive: true });
  return SqliteDeltaChannel.open(path, onError);
}
