// The `write_file` tool: writes a whole text file in the workspace, creating parent directories,
// atomically (temp file + rename). Same content → same file and same result, so it is idempotent.
import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { type BuiltinTool, fail, ok, parseArgs, toolSchema } from './builtin-tool.js';
import { describeFsError, writeFileAtomic } from './text-file.js';
import { resolveWorkspacePath } from './workspace-path.js';

const WriteFileArgs = z.strictObject({
  path: z.string().describe('File path relative to the workspace root. Parent directories are created.'),
  content: z.string().describe('The complete new content of the file.'),
});

export function createWriteFileTool(): BuiltinTool {
  return {
    schema: toolSchema(
      'write_file',
      'Create or overwrite a text file in the workspace with the given content (parent directories are created). To change part of a file, use edit_file.',
      WriteFileArgs,
    ),
    idempotent: true,
    quick: true,
    concurrencySafe: false,
    requiresApproval: false,
    async run(args, context) {
      const parsed = parseArgs('write_file', WriteFileArgs, args);
      if (!parsed.ok) return parsed.error;
      const { path, content } = parsed.value;
      const resolved = await resolveWorkspacePath(context.workspace, path);
      if (!resolved.ok) return fail(resolved.error);
      if (resolved.exists) {
        const info = await stat(resolved.absolute).catch(() => undefined);
        if (info?.isDirectory()) return fail(`${resolved.relative} is a directory; give a file path.`);
      }
      try {
        await writeFileAtomic(resolved.absolute, content);
      } catch (error) {
        return fail(describeFsError(error, resolved.relative));
      }
      const bytes = Buffer.byteLength(content, 'utf8');
      return ok(`Wrote ${bytes} bytes (${countLines(content)} lines) to ${resolved.relative}.`);
    },
  };
}

function countLines(text: string): number {
  if (text === '') return 0;
  const newlines = text.split('\n').length - 1;
  return text.endsWith('\n') ? newlines : newlines + 1;
}
