// The `list_dir` tool: the entries of one workspace directory, sorted by name, directories marked
// with a trailing `/` and symlinks with `@` (not followed); long listings are cut and say so.
import { readdir, stat } from 'node:fs/promises';
import { z } from 'zod';
import { type BuiltinTool, fail, ok, parseArgs, toolSchema } from './builtin-tool.js';
import { describeFsError } from './text-file.js';
import { resolveWorkspacePath } from './workspace-path.js';

const ListDirArgs = z.strictObject({
  path: z.string().default('.').describe('Directory path relative to the workspace root (default: the root).'),
});

export interface ListDirToolOptions {
  /** Most entries shown (default 1000). */
  readonly maxEntries?: number;
}

export function createListDirTool(options: ListDirToolOptions = {}): BuiltinTool {
  const maxEntries = options.maxEntries ?? 1000;
  return {
    schema: toolSchema(
      'list_dir',
      'List a directory in the workspace: one entry per line, sorted; directories end with "/", symlinks with "@".',
      ListDirArgs,
    ),
    idempotent: true,
    quick: true,
    readOnly: true,
    concurrencySafe: true,
    requiresApproval: false,
    async run(args, context) {
      const parsed = parseArgs('list_dir', ListDirArgs, args);
      if (!parsed.ok) return parsed.error;
      const resolved = await resolveWorkspacePath(context.workspace, parsed.value.path);
      if (!resolved.ok) return fail(resolved.error);
      const shown = resolved.relative;
      try {
        if (!(await stat(resolved.absolute)).isDirectory()) {
          return fail(`${shown} is not a directory (use read_file for files).`);
        }
        const entries = await readdir(resolved.absolute, { withFileTypes: true });
        const names = entries
          .map((entry) =>
            entry.isDirectory() ? `${entry.name}/` : entry.isSymbolicLink() ? `${entry.name}@` : entry.name,
          )
          .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        if (names.length === 0) return ok(`(${shown} is empty)`);
        const lines = names.slice(0, maxEntries);
        if (names.length > maxEntries) {
          lines.push(`[truncated: showing ${maxEntries} of ${names.length} entries; use glob to narrow down]`);
        }
        return ok(lines.join('\n'));
      } catch (error) {
        return fail(describeFsError(error, shown));
      }
    },
  };
}
