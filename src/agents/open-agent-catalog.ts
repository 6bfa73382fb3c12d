// Opens the agent catalog that goes with a store spec, the way openSessionStore picks the store: postgres:// →
// the `dh_agents` table there; a sharded store → that table on shard 0 (the catalog is small and read whole, so
// it is not split); a SQLite path → a `.agents.db` file beside it; `:memory:` → one process's own.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseStoreSpec } from '../stores/store-spec.js';
import type { AgentCatalog, AgentCatalogOptions } from './agent-catalog.js';
import { agentCatalogPathFor, SqliteAgentCatalog } from './sqlite-agent-catalog.js';

export async function openAgentCatalog(storeSpec: string, options: AgentCatalogOptions = {}): Promise<AgentCatalog> {
  const parsed = parseStoreSpec(storeSpec);
  if (parsed.kind !== 'sqlite') {
    const { PostgresAgentCatalog } = await import('./postgres-agent-catalog.js');
    return await PostgresAgentCatalog.open(parsed.kind === 'postgres' ? parsed.url : (parsed.urls[0] ?? ''), options);
  }
  if (parsed.path === ':memory:') return SqliteAgentCatalog.open(':memory:', options);
  const path = agentCatalogPathFor(parsed.path);
  mkdirSync(dirname(path), { recursive: true });
  return SqliteAgentCatalog.open(path, options);
}
