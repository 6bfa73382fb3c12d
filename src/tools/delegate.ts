// The delegation tool: its schema and depth limit. It never runs here: the tool step logs the call's
// start and hands the child to the workflow, which runs it as a child session (src/workflows/delegations.ts).
import { DELEGATE_TOOL_NAME, DelegateArguments } from '../core/index.js';
import type { ToolDefinition } from '../plugins/contracts.js';
import { fail, toolSchema } from './builtin-tool.js';

const DESCRIPTION =
  'Hand a self-contained task to a subagent: a new session that works in the same workspace with its own ' +
  "context, runs until it answers, and returns its final answer (and what it spent) as this call's result. " +
  'Several delegate calls in one answer run in parallel. The subagent sees only the task: say everything it needs.';

/** `maxDepth`: how deep a tree of subagents may grow (1: top-level sessions delegate, their children do not). */
export function createDelegateTool(options: { maxDepth: number }): ToolDefinition {
  if (!Number.isInteger(options.maxDepth) || options.maxDepth < 1) {
    throw new RangeError(`delegate: maxDepth must be a positive integer, got ${options.maxDepth}`);
  }
  return {
    schema: toolSchema(DELEGATE_TOOL_NAME, DESCRIPTION, DelegateArguments),
    idempotent: true,
    delegation: { maxDepth: options.maxDepth },
    // Only reached if a runtime without the tool step's delegation path calls it.
    run: () => Promise.resolve(fail('delegate: this worker cannot run subagents')),
  };
}
