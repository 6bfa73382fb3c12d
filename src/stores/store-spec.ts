// What a store spec (DH_STORE) names: a SQLite file, one PostgreSQL database, or a sharded store of several
// PostgreSQL databases (a list of URLs, shard 0 first). Every opener (log, live deltas, limiter) reads it here.
import { DhError } from '../core/errors.js';

/** The spec cannot name or reach a store. Not in `ErrorCode` yet: it is a startup failure, not a log one. */
export const STORE_SPEC_INVALID = 'STORE_SPEC_INVALID';

export type StoreSpec =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string }
  | { readonly kind: 'sharded'; readonly urls: readonly string[] };

/** The most shards a store may have: each is a pool of connections from every worker. */
export const MAX_SHARDS = 256;

/**
 * `postgres://…` or `postgresql://…` is one database; two or more of them separated by spaces, commas or
 * newlines are a sharded store whose shard `i` is the `i`-th URL; any other URL scheme is refused; anything
 * else is a SQLite file path, or `:memory:`.
 */
export function parseStoreSpec(spec: string): StoreSpec {
  const trimmed = spec.trim();
  if (trimmed === '') throw invalidStoreSpec(spec, 'it is empty; give a SQLite file path or a postgres:// URL');
  const entries = trimmed.split(/[\s,]+/);
  if (entries.length > 1 && entries.some((entry) => schemeOf(entry) !== undefined)) {
    const problems = entries.flatMap((entry, i) => {
      const scheme = schemeOf(entry);
      return scheme === 'postgres' || scheme === 'postgresql'
        ? []
        : [`shard ${i} "${redactUrl(entry)}" is not a postgres:// URL (every shard is a PostgreSQL database)`];
    });
    const seen = new Map<string, number>();
    entries.forEach((entry, i) => {
      const first = seen.get(sameDatabase(entry));
      if (first !== undefined) problems.push(`shards ${first} and ${i} name the same database`);
      else seen.set(sameDatabase(entry), i);
    });
    if (entries.length > MAX_SHARDS) problems.push(`${entries.length} shards; at most ${MAX_SHARDS}`);
    if (problems.length > 0) throw invalidStoreSpec(redactUrls(entries), problems.join('; '));
    return { kind: 'sharded', urls: entries };
  }
  const scheme = schemeOf(trimmed);
  if (scheme === 'postgres' || scheme === 'postgresql') return { kind: 'postgres', url: trimmed };
  if (scheme !== undefined) {
    throw invalidStoreSpec(
      spec,
      `unsupported scheme "${scheme}://"; use postgres://, postgresql:// or a SQLite file path`,
    );
  }
  return { kind: 'sqlite', path: trimmed };
}

export function invalidStoreSpec(spec: string, problem: string, cause?: unknown): DhError {
  return new DhError(
    STORE_SPEC_INVALID,
    `session store "${spec}": ${problem}`,
    { spec, problem },
    cause === undefined ? undefined : { cause },
  );
}

/** The URL without its password, for error messages and the stored shard map. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
  }
}

export function redactUrls(urls: readonly string[]): string {
  return urls.map(redactUrl).join(' ');
}

function schemeOf(entry: string): string | undefined {
  return /^([a-z][a-z0-9+.-]*):\/\//i.exec(entry)?.[1]?.toLowerCase();
}

/** Host, port, database and search path: two URLs that differ only in credentials are the same shard. */
function sameDatabase(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port}${parsed.pathname}?${parsed.searchParams.get('options') ?? ''}`;
  } catch {
    return url;
  }
}
