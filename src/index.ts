// The package's root entry (`durable-harness`): what an agent is made of — defineAgent, defineTool, the
// built-in tools and the plugin contracts — and nothing that opens a store or a connection. The worker that
// runs agents is `durable-harness/worker`, the client that steers sessions `durable-harness/client`.
export { defineAgent, type Agent, type AgentCompaction, type AgentDefinition } from './agents/define-agent.js';
export { defineTool, type ToolSpec } from './tools/define-tool.js';
export {
  createBuiltinTools as builtinTools,
  type BuiltinToolList,
  type BuiltinToolsOptions,
} from './tools/builtin-tools.js';
export { approvalPolicyPlugin, systemPromptPlugin, toolsPlugin, type ApprovalPolicy } from './plugins/basic-plugins.js';
export type { Notice, Plugin, SessionPrefix } from './plugins/plugin.js';
export type { ToolContext, ToolDefinition, ToolOutput, ToolProgress } from './plugins/contracts.js';
export type { AgentOverrides } from './core/agent-fields.js';
export { DhError } from './core/errors.js';
