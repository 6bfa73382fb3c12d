// Opens the fleet limiter that goes with a store spec, the way openSessionStore picks the store:
// postgres:// → tables in that database; a sharded store → those tables on shard 0 (one fleet, one bucket per
// account: the limiter's state is small and hot, so it is not split); a SQLite path → a `.limits.db` file
// beside it; `:memory:` → a private file-less one (one process only).
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { FleetConfig } from '../config/fleet-config.js';
import type { ProviderProfile } from '../providers/provider-profiles.js';
import { FleetLimiter } from './fleet-limiter.js';
import type { LimiterStore } from './limiter-store.js';
import { parseStoreSpec } from '../stores/store-spec.js';
import { limiterPathFor, SqliteLimiterStore } from './sqlite-limiter-store.js';

/**
 * The quota's bucket: one per provider account, i.e. per endpoint and key. The key enters only as a
 * digest prefix, so workers with the same key share a bucket and nothing stored reveals the key.
 */
export function quotaBucket(profile: Pick<ProviderProfile, 'name' | 'baseURL'>, apiKey: string): string {
  const account = createHash('sha256').update(`${profile.baseURL}\n${apiKey}`, 'utf8').digest('hex').slice(0, 16);
  return `${profile.name}:${account}`;
}

export async function openLimiterStore(storeSpec: string): Promise<LimiterStore> {
  const parsed = parseStoreSpec(storeSpec);
  if (parsed.kind !== 'sqlite') {
    const { PostgresLimiterStore } = await import('./postgres-limiter-store.js');
    return await PostgresLimiterStore.open(parsed.kind === 'postgres' ? parsed.url : (parsed.urls[0] ?? ''));
  }
  if (parsed.path === ':memory:') return SqliteLimiterStore.open(':memory:');
  const path = limiterPathFor(parsed.path);
  mkdirSync(dirname(path), { recursive: true });
  return SqliteLimiterStore.open(path);
}

/** The worker's limiter for its provider account, or undefined when no quota (or tenant cap) applies to it. */
export async function openFleetLimiter(
  storeSpec: string,
  config: FleetConfig,
  profile: Pick<ProviderProfile, 'name' | 'baseURL'>,
  apiKey: string,
): Promise<FleetLimiter | undefined> {
  const tenantQuota = config.tenant !== undefined ? config.tenants[config.tenant] : undefined;
  const quotaOn = Object.keys(config.quota).length > 0;
  const tenantOn =
    tenantQuota !== undefined &&
    (tenantQuota.requestsPerMinute !== undefined ||
      tenantQuota.tokensPerMinute !== undefined ||
      tenantQuota.costCapUsd !== undefined);
  if (!quotaOn && !tenantOn) return undefined;
  return new FleetLimiter({
    store: await openLimiterStore(storeSpec),
    bucket: quotaBucket(profile, apiKey),
    quota: config.quota,
    tenants: config.tenants,
  });
}
