// The `grep` tool: searches workspace file contents for a regular expression, in Node (no system
// `rg` needed). Output is `file:line: text`, capped; binary and very large files are skipped.
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { type BuiltinTool, fail, messageOf, ok, parseArgs, toolSchema } from './builtin-tool.js';
import { findFiles, SKIPPED_DIRS } from './find-files.js';
import { looksBinary } from './text-file.js';
import { resolveWorkspacePath } from './workspace-path.js';

const GrepArgs = z.strictObject({
  pattern: z.string().min(1).describe('Regular expression (JavaScript syntax) searched in each line.'),
  path: z
    .string()
    .optional()
    .describe('File or directory to search, relative to the workspace root (default: the root).'),
  glob: z
    .string()
    .optional()
    .describe('Only search files matching this glob, relative to path; without "/" it matches at any depth ("*.ts").'),
  caseInsensitive: z.boolean().optional().describe('Match case-insensitively (default false).'),
});

export interface GrepToolOptions {
  /** Most matching lines shown (default 200). */
  readonly maxMatches?: number;
  /** Matching lines are cut to this many characters (default 300). */
  readonly maxLineChars?: number;
  /** Larger files are skipped (default 8 MiB). */
  readonly maxFileBytes?: number;
}

export function createGrepTool(options: GrepToolOptions = {}): BuiltinTool {
  const maxMatches = options.maxMatches ?? 200;
  const maxLineChars = options.maxLineChars ?? 300;
  const maxFileBytes = options.maxFileBytes ?? 8 * 1024 * 1024;
  return {
    schema: toolSchema(
      'grep',
      `Search file contents in the workspace with a regular expression. Prints "file:line: text" for each matching line (at most ${maxMatches}); binary files and ${SKIPPED_DIRS.join(', ')} are skipped.`,
      GrepArgs,
    ),
    idempotent: true,
    quick: true,
    readOnly: true,
    concurrencySafe: true,
    requiresApproval: false,
    async run(args, context) {
      const parsed = parseArgs('grep', GrepArgs, args);
      if (!parsed.ok) return parsed.error;
      const { pattern, path = '.', glob, caseInsensitive } = parsed.value;
      let regex: RegExp;
      try {
        regex = new RegExp(pattern, caseInsensitive ? 'i' : '');
      } catch (error) {
        return fail(`Invalid regular expression: ${messageOf(error)}`);
      }
      const resolved = await resolveWorkspacePath(context.workspace, path);
      if (!resolved.ok) return fail(resolved.error);
      if (!resolved.exists) return fail(`${resolved.relative} does not exist.`);

      let files: readonly string[];
      const info = await stat(resolved.absolute);
      if (info.isDirectory()) {
        const filter = glob === undefined ? '**/*' : glob.includes('/') ? glob : `**/${glob}`;
        let found;
        try {
          found = await findFiles(resolved.root, resolved.absolute, filter, context.signal);
        } catch (error) {
          if (context.signal.aborted) throw error;
          return fail(`grep failed: ${messageOf(error)}`);
        }
        if (!found.ok) return fail(found.error);
        files = found.files;
      } else {
        files = [resolved.relative];
      }

      const out: string[] = [];
      let matches = 0;
      let binary = 0;
      let large = 0;
      let unreadable = 0;
      search: for (const file of files) {
        if (context.signal.aborted) throw new Error('grep was interrupted');
        const absolute = join(resolved.root, file);
        let data: Buffer;
        try {
          if ((await stat(absolute)).size > maxFileBytes) {
            large++;
            continue;
          }
          data = await readFile(absolute);
        } catch {
          unreadable++;
          continue;
        }
        if (looksBinary(data)) {
          binary++;
          continue;
        }
        const lines = data.toString('utf8').split('\n');
        for (let i = 0; i < lines.length; i++) {
          const line = (lines[i] ?? '').replace(/\r$/, '');
          if (!regex.test(line)) continue;
          matches++;
          if (matches > maxMatches) break search;
          const text = line.length > maxLineChars ? `${line.slice(0, maxLineChars)} … [cut]` : line;
          out.push(`${file}:${i + 1}: ${text}`);
        }
      }
      const skipped = [
        binary > 0 ? `${binary} binary` : '',
        large > 0 ? `${large} larger than ${maxFileBytes} bytes` : '',
        unreadable > 0 ? `${unreadable} unreadable` : '',
      ].filter((part) => part !== '');
      const note = skipped.length > 0 ? `[skipped files: ${skipped.join(', ')}]` : '';
      if (out.length === 0) {
        const where = resolved.relative === '.' ? 'in the workspace' : `in ${resolved.relative}`;
        const searched = `${files.length} file${files.length === 1 ? '' : 's'} searched ${where}`;
        return ok([`No matches for /${pattern}/ (${searched}).`, note].filter((line) => line !== '').join('\n'));
      }
      if (matches > maxMatches) {
        out.push(`[truncated: showing the first ${maxMatches} matches; narrow the pattern, path or glob]`);
      }
      if (note !== '') out.push(note);
      return ok(out.join('\n'));
    },
  };
}
