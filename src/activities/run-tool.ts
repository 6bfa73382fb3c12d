// One tool call: parse the model's arguments and run the tool. Every failure the model should see
// (unknown tool, bad JSON, a tool that throws) is a result; only an interrupt leaves as a throw.
import { CancelledFailure } from '@temporalio/activity';
import type { ToolCall } from '../core/index.js';
import type { ToolContext, ToolDefinition, ToolOutput } from '../plugins/contracts.js';

export async function runTool(
  tool: ToolDefinition | undefined,
  call: ToolCall,
  context: ToolContext,
): Promise<ToolOutput> {
  if (!tool) return { status: 'error', output: `Unknown tool "${call.name}".` };
  let args: unknown;
  try {
    args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (error) {
    return {
      status: 'error',
      output: `The arguments are not valid JSON (${(error as Error).message}). Send a JSON object.`,
    };
  }
  try {
    return await tool.run(args, context);
  } catch (error) {
    if (context.signal.aborted) throw new CancelledFailure('interrupted during a tool call');
    // A tool that throws is a failure the model should see, not a crashed step.
    return { status: 'error', output: `The tool failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}
