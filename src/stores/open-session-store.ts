// Picks and opens the session-log backend a store spec names (store-spec.ts): a SQLite file path, a
// postgres:// URL, or a list of them, a sharded store.
import { DhError } from '../core/errors.js';
import { messageOf } from './event-row.js';
import type { LogKey } from './log-key.js';
import type { SessionStore } from './session-store.js';
import { SqliteSessionStore } from './sqlite-session-store.js';
import { invalidStoreSpec, parseStoreSpec, redactUrl, redactUrls } from './store-spec.js';

export { STORE_SPEC_INVALID } from './store-spec.js';

export interface OpenSessionStoreOptions {
  /** DH_LOG_KEY: every row the store inserts also gets a MAC of its chain digest. */
  readonly logKey?: LogKey | undefined;
}

/** Opens the store `spec` names; a sharded store checks its shard map first (sharded-session-store.ts). */
export async function openSessionStore(spec: string, options: OpenSessionStoreOptions = {}): Promise<SessionStore> {
  const keyed = options.logKey !== undefined ? { logKey: options.logKey } : {};
  const parsed = parseStoreSpec(spec);
  if (parsed.kind === 'sharded') {
    // A refused shard map is its own error (its code and the differences); only a failure to connect is the spec's.
    const { ShardedSessionStore } = await import('./sharded-session-store.js');
    return await ShardedSessionStore.open(parsed.urls, keyed).catch((error: unknown) => {
      if (error instanceof DhError) throw error;
      throw invalidStoreSpec(redactUrls(parsed.urls), `cannot open the sharded store: ${messageOf(error)}`, error);
    });
  }
  if (parsed.kind === 'postgres') {
    try {
      // Loaded only here: `pg` costs ~40 ms of every CLI start that uses SQLite.
      const { PostgresSessionStore } = await import('./postgres-session-store.js');
      return await PostgresSessionStore.open(parsed.url, keyed);
    } catch (error) {
      throw invalidStoreSpec(redactUrl(parsed.url), `cannot open PostgreSQL: ${messageOf(error)}`, error);
    }
  }
  try {
    return SqliteSessionStore.open(parsed.path, keyed);
  } catch (error) {
    throw invalidStoreSpec(spec, `cannot open SQLite file: ${messageOf(error)}`, error);
  }
}
