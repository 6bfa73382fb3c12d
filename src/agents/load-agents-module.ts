// `dh worker --agents <module>`: the user's agents from a TypeScript or JavaScript module — its default export
// (an agent or a list of them), else its `agents` export, else every agent it exports by name.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DhError } from '../core/index.js';
import type { Agent } from './define-agent.js';

export const AgentsModuleCode = 'AGENTS_MODULE';

export async function loadAgentsModule(path: string): Promise<Agent[]> {
  const file = resolve(path);
  if (!existsSync(file)) throw new DhError(AgentsModuleCode, `--agents: no file ${file}`, { file });
  let exports: Record<string, unknown>;
  try {
    // TypeScript through tsx's loader (a dependency of the CLI), JavaScript as it is.
    exports = /\.[cm]?tsx?$/.test(file)
      ? ((await (await import('tsx/esm/api')).tsImport(pathToFileURL(file).href, import.meta.url)) as Record<
          string,
          unknown
        >)
      : ((await import(pathToFileURL(file).href)) as Record<string, unknown>);
  } catch (error) {
    throw new DhError(
      AgentsModuleCode,
      `--agents: ${file} does not load: ${error instanceof Error ? error.message : String(error)}`,
      { file },
    );
  }
  // A module compiled as CommonJS (no `"type": "module"` above it) comes wrapped: its exports are `default`'s.
  const wrapped = exports.default as Record<string, unknown> | undefined;
  if (typeof wrapped === 'object' && wrapped !== null && !Array.isArray(wrapped) && !isAgent(wrapped)) {
    exports = { ...wrapped };
  }
  const agentsIn = (value: unknown): Agent[] => (Array.isArray(value) ? value : [value]).flat().filter(isAgent);
  const agents =
    [exports.default, exports.agents, Object.values(exports)].map(agentsIn).find((found) => found.length > 0) ?? [];
  if (agents.length === 0) {
    throw new DhError(
      AgentsModuleCode,
      `--agents: ${file} exports no agent (export default [agentA, agentB] of defineAgent(...) values)`,
      { file },
    );
  }
  return agents;
}

function isAgent(value: unknown): value is Agent {
  const agent = value as Agent | null;
  return (
    typeof agent === 'object' &&
    agent !== null &&
    typeof agent.name === 'string' &&
    typeof agent.version === 'string' &&
    typeof agent.instructions === 'string' &&
    Array.isArray(agent.tools)
  );
}
