// A worker given a whole plugin list instead of agents (embedders, tests): that list is its one agent, `default`,
// versioned by the plugins' names and the call configuration it starts from.
import { canonicalJson, DEFAULT_AGENT_NAME, sha256Digest, type CallConfig } from '../core/index.js';
import type { Plugin } from '../plugins/plugin.js';
import { createPluginRuntime } from '../plugins/plugin-runtime.js';
import type { ServedAgent } from './agent-registry.js';

export function pluginListAgent(plugins: readonly Plugin[], seed: CallConfig): ServedAgent {
  const hooks = createPluginRuntime({ plugins, seed });
  const tools = [...hooks.tools.values()].map((tool) => tool.schema);
  const version = sha256Digest(canonicalJson({ plugins: plugins.map((p) => p.name), seed, tools }))
    .replace(/^sha256:/, '')
    .slice(0, 12);
  return { name: DEFAULT_AGENT_NAME, version, model: seed.model, tools: hooks.tools, plugins, hooks };
}
