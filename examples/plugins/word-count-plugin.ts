// An example plugin: one line for the system prompt and one tool. An agent with it, served by a worker:
//   startWorker({ agents: [defineAgent({ name: 'writer', instructions: '…', plugins: [wordCountPlugin()] })] })
// It imports ../../src because it lives in this repository; a project of its own imports the same names from
// `durable-harness` (docs/building-agents.md).
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import type { ToolDefinition } from '../../src/plugins/contracts.js';
import type { Plugin } from '../../src/plugins/plugin.js';
import { resolveWorkspacePath } from '../../src/tools/workspace-path.js';

const Args = z.strictObject({ path: z.string().min(1).describe('A file in the workspace') });

export const wordCountTool: ToolDefinition = {
  schema: {
    name: 'word_count',
    description: 'Count the words of a text file in the workspace.',
    parameters: z.toJSONSchema(Args) as ToolDefinition['schema']['parameters'],
  },
  idempotent: true, // reading twice is harmless, so a crash mid-call may rerun it
  concurrencySafe: true,
  async run(raw, context) {
    const args = Args.safeParse(raw);
    if (!args.success)
      return { status: 'error', output: `Bad arguments: ${args.error.issues[0]?.message ?? 'invalid'}` };
    const resolved = await resolveWorkspacePath(context.workspace, args.data.path);
    if (!resolved.ok) return { status: 'error', output: resolved.error };
    try {
      const text = await readFile(resolved.absolute, 'utf8');
      return { status: 'ok', output: `${text.split(/\s+/).filter(Boolean).length} words` };
    } catch (error) {
      return { status: 'error', output: `Cannot read ${args.data.path}: ${(error as Error).message}` };
    }
  },
};

export function wordCountPlugin(): Plugin {
  return {
    name: 'word-count',
    sessionPrefix: () => ({ system: 'Use word_count when asked how long a document is.' }),
    tools: () => [wordCountTool],
  };
}
