// The default plugin list of a worker: system prompt, built-in tools, the MCP servers' tools, approval
// policy, repeat guard, the live token stream and logging. Embedders compose their own list from the same pieces.
import type { WorkerConfig } from '../config/worker-config.js';
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

/** The default plugin list of a worker; embedders compose their own from the same pieces. */
export function defaultPlugins(
  config: WorkerConfig,
  mcpTools: readonly ToolDefinition[] = [],
  options: { readonly policy?: boolean } = {},
): Plugin[] {
  const builtins = [...createBuiltinTools({ shell: { sandbox: config.shellSandbox } })];
  // Found by its name, not its place in the list: the tool order may change, the name is the contract.
  const shell = builtins.find((tool): tool is ShellTool => tool.schema.name === SHELL_TOOL_NAME);
  if (shell?.sandboxUnavailable) {
    console.warn(
      `worker: the shell tool runs WITHOUT an OS sandbox (${shell.sandboxUnavailable}); every shell call asks for approval${options.policy === true ? ' unless a policy rule allows it' : ''}`,
    );
  }
  return [
    systemPromptPlugin(config.systemPrompt),
    toolsPlugin('builtin-tools', builtins),
    ...(config.subagentDepth > 0
      ? [toolsPlugin('subagents', [createDelegateTool({ maxDepth: config.subagentDepth })])]
      : []),
    // After the built-in ones, sorted by name (src/mcp/mcp-tools.ts): the order is part of the header.
    ...(mcpTools.length > 0 ? [toolsPlugin('mcp-tools', mcpTools)] : []),
    // With a policy file, its rules decide what an unsandboxed shell may do (no rule: it asks anyway).
    approvalPolicyPlugin({
      ask: config.approvalAsk,
      deny: config.approvalDeny,
      tools: options.policy === true ? [] : [...builtins, ...mcpTools],
    }),
    repeatGuardPlugin(),
    // Token deltas to the side channel next to the store (never into history or the log).
    liveStreamPlugin(openDeltaChannel(config.store), { warn: (message) => console.warn(message) }),
    loggingPlugin(createLogger()),
  ];
}
