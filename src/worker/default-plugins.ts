// The worker's configuration as an agent (`default`: DH_SYSTEM_PROMPT, DH_MODEL, the built-in tools, delegation,
// the MCP servers' tools, DH_APPROVAL_ASK and DH_APPROVAL_DENY), the plugins every agent of a worker shares (repeat guard, live token
// stream, logging), and the two as one plugin list for embedders that compose their own.
import type { WorkerConfig } from '../config/worker-config.js';
import { defineAgent, type Agent } from '../agents/define-agent.js';
import { DEFAULT_AGENT_NAME } from '../core/index.js';
import { createLogger } from '../observability/logger.js';
import { loggingPlugin } from '../observability/logging-plugin.js';
import { approvalPolicyPlugin, systemPromptPlugin, toolsPlugin } from '../plugins/basic-plugins.js';
import type { ToolDefinition } from '../plugins/contracts.js';
import type { Plugin } from '../plugins/plugin.js';
import { repeatGuardPlugin } from '../plugins/repeat-guard-plugin.js';
import { liveStreamPlugin } from '../streaming/live-stream-plugin.js';
import { openDeltaChannel } from '../streaming/open-delta-channel.js';
import { createBuiltinTools } from '../tools/builtin-tools.js';
import { createDelegateTool } from '../tools/delegate.js';
import type { ShellTool } from '../tools/shell.js';

/** The model-visible name of the built-in shell tool (src/tools/shell.ts). */
const SHELL_TOOL_NAME = 'shell';

/** The agent a worker serves when it is given none: its configuration, as `default`. */
export function defaultAgent(
  config: WorkerConfig,
  mcpTools: readonly ToolDefinition[] = [],
  options: { readonly policy?: boolean } = {},
): Agent {
  const builtins = [...createBuiltinTools({ shell: { sandbox: config.shellSandbox } })];
  // Found by its name, not its place in the list: the tool order may change, the name is the contract.
  const shell = builtins.find((tool): tool is ShellTool => tool.schema.name === SHELL_TOOL_NAME);
  if (shell?.sandboxUnavailable) {
    console.warn(
      `worker: the shell tool runs WITHOUT an OS sandbox (${shell.sandboxUnavailable}); every shell call asks for approval${options.policy === true ? ' unless a policy rule allows it' : ''}`,
    );
  }
  return defineAgent({
    name: DEFAULT_AGENT_NAME,
    description: 'the worker configuration (DH_MODEL, DH_SYSTEM_PROMPT, built-in and MCP tools)',
    instructions: config.systemPrompt,
    model: config.model,
    ...(config.temperature !== undefined ? { temperature: config.temperature } : {}),
    tools: [
      ...builtins,
      ...(config.subagentDepth > 0 ? [createDelegateTool({ maxDepth: config.subagentDepth })] : []),
      // After the built-in ones, sorted by name (src/mcp/mcp-tools.ts): the order is part of the header.
      ...mcpTools,
    ],
    policy: { ask: config.approvalAsk, deny: config.approvalDeny },
  });
}

/** What every agent of a worker runs after its own plugins: the repeat guard, the live token stream, logging. */
export function workerPlugins(config: WorkerConfig): Plugin[] {
  return [
    repeatGuardPlugin(),
    // Token deltas to the side channel next to the store (never into history or the log).
    liveStreamPlugin(openDeltaChannel(config.store), { warn: (message) => console.warn(message) }),
    loggingPlugin(createLogger()),
  ];
}

/** The default agent and the worker's plugins as one list; embedders compose their own from the same pieces. */
export function defaultPlugins(
  config: WorkerConfig,
  mcpTools: readonly ToolDefinition[] = [],
  options: { readonly policy?: boolean } = {},
): Plugin[] {
  const agent = defaultAgent(config, mcpTools, options);
  return [
    systemPromptPlugin(agent.instructions),
    toolsPlugin('builtin-tools', agent.tools),
    // With a policy file, its rules decide what an unsandboxed shell may do (no rule: it asks anyway).
    approvalPolicyPlugin({ ...agent.policy, tools: options.policy === true ? [] : agent.tools }),
    ...workerPlugins(config),
  ];
}
