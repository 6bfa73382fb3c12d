// Small building-block plugins: a system prompt, a tool set, and an approval policy by tool name.
import type { ToolDefinition, ToolGate } from './contracts.js';
import { toolNameMatches } from '../mcp/mcp-tool-name.js';
import type { Plugin } from './plugin.js';

export function systemPromptPlugin(system: string): Plugin {
  return { name: 'system-prompt', sessionPrefix: () => ({ system }) };
}

export function toolsPlugin(name: string, tools: readonly ToolDefinition[]): Plugin {
  return { name, tools: () => tools };
}

/** Tool names; `mcp__<server>` names every tool of that MCP server. */
export interface ApprovalPolicy {
  /** Tool names that run without asking. */
  readonly allow?: readonly string[];
  /** Tool names that pause for a decision (the `approve` update) before running. */
  readonly ask?: readonly string[];
  /** Tool names that never run; the model sees a denied result. */
  readonly deny?: readonly string[];
  /** Tools flagged `requiresApproval` (e.g. an unsandboxed shell) ask unless allowed explicitly. */
  readonly tools?: readonly ToolDefinition[];
}

export function approvalPolicyPlugin(policy: ApprovalPolicy): Plugin {
  const flagged = new Set(
    (policy.tools ?? [])
      .filter((t) => (t as { requiresApproval?: boolean }).requiresApproval === true)
      .map((t) => t.schema.name),
  );
  return {
    name: 'approval-policy',
    toolBefore(call): ToolGate | undefined {
      const listed = (names: readonly string[] | undefined) => names?.some((name) => toolNameMatches(name, call.name));
      if (listed(policy.deny)) return { decision: 'deny', reason: `the tool ${call.name} is not allowed` };
      if (listed(policy.allow)) return { decision: 'allow' };
      if (listed(policy.ask)) return { decision: 'ask', reason: `${call.name} needs approval` };
      if (flagged.has(call.name))
        return { decision: 'ask', reason: `${call.name} runs without an OS sandbox on this host` };
      return undefined;
    },
  };
}
