// A worker given a whole plugin list instead of agents (embedders, tests): that list is its one agent, `default`,
// versioned by the plugins' names and the call configuration it starts from.
import { DEFAULT_AGENT_NAME, type CallConfig } from '../core/index.js';
import { versionDigest } from './define-agent.js';
import type { Plugin } from '../plugins/plugin.js';
import { createPluginRuntime } from '../plugins/plugin-runtime.js';
import type { ServedAgent } from './agent-registry.js';

export function pluginListAgent(plugins: readonly Plugin[], seed: CallConfig): ServedAgent {
  const hooks = createPluginRuntime({ plugins, seed });
  const tools = [...hooks.tools.values()].map((tool) => tool.schema);
  const version = versionDigest({ plugins: plugins.map((p) => p.name), seed, tools });
  return { name: DEFAULT_AGENT_NAME, version, model: seed.model, tools: hooks.tools, plugins, hooks };
}
