// Picks and opens the session-log backend a store spec names: a postgres:// URL or a SQLite file path.
import { DhError } from '../core/errors.js';
import { messageOf } from './event-row.js';
import type { LogKey } from './log-key.js';
import type { SessionStore } from './session-store.js';
import { SqliteSessionStore } from './sqlite-session-store.js';

/** The spec cannot name or reach a store. Not in `ErrorCode` yet: it is a startup failure, not a log one. */
export const STORE_SPEC_INVALID = 'STORE_SPEC_INVALID';

export interface OpenSessionStoreOptions {
  /** DH_LOG_KEY: every row the store inserts also gets a MAC of its chain digest. */
  readonly logKey?: LogKey | undefined;
}

/**
 * `postgres://…` or `postgresql://…` opens PostgreSQL; any other URL scheme is refused; anything else
 * is a SQLite file path (created if missing; its directory must exist), or `:memory:`.
 */
export async function openSessionStore(spec: string, options: OpenSessionStoreOptions = {}): Promise<SessionStore> {
  const keyed = options.logKey !== undefined ? { logKey: options.logKey } : {};
  const trimmed = spec.trim();
  if (trimmed === '') throw invalidSpec(spec, 'it is empty; give a SQLite file path or a postgres:// URL');
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(trimmed)?.[1]?.toLowerCase();
  if (scheme === 'postgres' || scheme === 'postgresql') {
    try {
      // Loaded only here: `pg` costs ~40 ms of every CLI start that uses SQLite.
      const { PostgresSessionStore } = await import('./postgres-session-store.js');
      return await PostgresSessionStore.open(trimmed, keyed);
    } catch (error) {
      throw invalidSpec(redact(trimmed), `cannot open PostgreSQL: ${messageOf(error)}`, error);
    }
  }
  if (scheme !== undefined) {
    throw invalidSpec(spec, `unsupported scheme "${scheme}://"; use postgres://, postgresql:// or a SQLite file path`);
  }
  try {
    return SqliteSessionStore.open(trimmed, keyed);
  } catch (error) {
    throw invalidSpec(spec, `cannot open SQLite file: ${messageOf(error)}`, error);
  }
}

function invalidSpec(spec: string, problem: string, cause?: unknown): DhError {
  return new DhError(
    STORE_SPEC_INVALID,
    `session store "${spec}": ${problem}`,
    { spec, problem },
    cause === undefined ? undefined : { cause },
  );
}

/** The URL without its password, for error messages. */
function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
  }
}
