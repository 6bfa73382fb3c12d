// The `glob` tool: workspace files matching a glob pattern (e.g. `src/**/*.ts`, matched on RE2 by
// find-files.ts), relative to the workspace root, sorted and capped. Symlinks are not followed; nothing
// outside the workspace is listed.
import { z } from 'zod';
import { type BuiltinTool, fail, messageOf, ok, parseArgs, toolSchema } from './builtin-tool.js';
import { findFiles, SKIPPED_DIRS } from './find-files.js';
import { resolveWorkspacePath } from './workspace-path.js';

const GlobArgs = z.strictObject({
  pattern: z.string().describe('Glob pattern relative to the workspace root, e.g. "src/**/*.ts" or "**/package.json".'),
});

export interface GlobToolOptions {
  /** Most paths shown (default 1000). */
  readonly maxResults?: number;
}

export function createGlobTool(options: GlobToolOptions = {}): BuiltinTool {
  const maxResults = options.maxResults ?? 1000;
  return {
    schema: toolSchema(
      'glob',
      `Find files in the workspace by glob pattern (*, ? and [abc] within one directory level, ** across levels, {a,b} alternatives). Returns matching file paths relative to the workspace root, sorted; ${SKIPPED_DIRS.join(', ')} are skipped unless the pattern names them.`,
      GlobArgs,
    ),
    idempotent: true,
    quick: true,
    readOnly: true,
    concurrencySafe: true,
    requiresApproval: false,
    async run(args, context) {
      const parsed = parseArgs('glob', GlobArgs, args);
      if (!parsed.ok) return parsed.error;
      const root = await resolveWorkspacePath(context.workspace, '.');
      if (!root.ok) return fail(root.error);
      let found;
      try {
        found = await findFiles(root.root, root.root, parsed.value.pattern, context.signal);
      } catch (error) {
        if (context.signal.aborted) throw error;
        return fail(`glob failed: ${messageOf(error)}`);
      }
      if (!found.ok) return fail(found.error);
      const { files } = found;
      if (files.length === 0) return ok(`No files match ${JSON.stringify(parsed.value.pattern)}.`);
      const lines = files.slice(0, maxResults);
      if (files.length > maxResults) {
        lines.push(`[truncated: showing ${maxResults} of ${files.length} matches; narrow the pattern]`);
      }
      return ok(lines.join('\n'));
    },
  };
}
