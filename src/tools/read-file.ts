// The `read_file` tool: a workspace text file with line numbers, optionally a line range; long files
// and long lines are cut, and the output says so and how to read on.
import { z } from 'zod';
import { type BuiltinTool, fail, ok, parseArgs, toolSchema } from './builtin-tool.js';
import { readTextFile } from './text-file.js';
import { resolveWorkspacePath } from './workspace-path.js';

const ReadFileArgs = z.strictObject({
  path: z.string().describe('File path relative to the workspace root.'),
  startLine: z.number().int().min(1).optional().describe('First line to show, 1-based (default 1).'),
  endLine: z.number().int().min(1).optional().describe('Last line to show, 1-based and inclusive (default: the end).'),
});

export interface ReadFileToolOptions {
  /** Most lines shown per call (default 400). */
  readonly maxLines?: number;
  /** Longer lines are cut (default 2000 characters). */
  readonly maxLineChars?: number;
  /** Most characters of output (default 64 KiB). */
  readonly maxOutputChars?: number;
}

export function createReadFileTool(options: ReadFileToolOptions = {}): BuiltinTool {
  const maxLines = options.maxLines ?? 400;
  const maxLineChars = options.maxLineChars ?? 2000;
  const maxOutputChars = options.maxOutputChars ?? 64 * 1024;
  return {
    schema: toolSchema(
      'read_file',
      `Read a text file in the workspace. Lines are shown as "<number>\\t<text>"; at most ${maxLines} lines per call (use startLine/endLine for more).`,
      ReadFileArgs,
    ),
    idempotent: true,
    quick: true,
    readOnly: true,
    concurrencySafe: true,
    requiresApproval: false,
    async run(args, context) {
      const parsed = parseArgs('read_file', ReadFileArgs, args);
      if (!parsed.ok) return parsed.error;
      const { path, startLine, endLine } = parsed.value;
      const resolved = await resolveWorkspacePath(context.workspace, path);
      if (!resolved.ok) return fail(resolved.error);
      const file = await readTextFile(resolved.absolute, resolved.relative);
      if (!file.ok) return fail(file.error);

      const lines = file.text.split('\n');
      if (lines.at(-1) === '') lines.pop();
      const total = lines.length;
      if (total === 0) return ok(`(${resolved.relative} is empty)`);
      const start = startLine ?? 1;
      if (start > total) return fail(`startLine ${start} is past the end of ${resolved.relative} (${total} lines).`);
      if (endLine !== undefined && endLine < start) {
        return fail(`endLine ${endLine} is before startLine ${start}.`);
      }
      const wantedEnd = Math.min(endLine ?? total, total);
      const lastAllowed = Math.min(wantedEnd, start + maxLines - 1);
      const width = String(lastAllowed).length;
      const out: string[] = [];
      let chars = 0;
      let shownEnd = start - 1;
      for (let n = start; n <= lastAllowed; n++) {
        let text = (lines[n - 1] ?? '').replace(/\r$/, '');
        if (text.length > maxLineChars) {
          text = `${text.slice(0, maxLineChars)} … [line cut: ${text.length} characters]`;
        }
        const line = `${String(n).padStart(width)}\t${text}`;
        if (chars + line.length + 1 > maxOutputChars && out.length > 0) break;
        out.push(line);
        chars += line.length + 1;
        shownEnd = n;
      }
      if (shownEnd < wantedEnd) {
        out.push(
          `[truncated: showing lines ${start}-${shownEnd} of ${total}; use startLine=${shownEnd + 1} to read on]`,
        );
      } else if (start > 1 || shownEnd < total) {
        out.push(`[showing lines ${start}-${shownEnd} of ${total}]`);
      }
      return ok(out.join('\n'));
    },
  };
}
