// The `grep` tool: searches workspace file contents for a regular expression, in Node (no system `rg`
// needed), on RE2 (src/patterns, line by line in search-lines.ts): the model writes the pattern and the
// workspace the text, and neither may stall the worker. Output is `file:line: text`, capped.
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { MAX_MATCHED_LENGTH, PatternUndecidableError, re2Problem } from '../patterns/re2-match.js';
import { type BuiltinTool, fail, messageOf, ok, parseArgs, toolSchema } from './builtin-tool.js';
import { findFiles, SKIPPED_DIRS } from './find-files.js';
import { searchLines } from './search-lines.js';
import { looksBinary } from './text-file.js';
import { TimeSlice } from './time-slice.js';
import { resolveWorkspacePath } from './workspace-path.js';

const GrepArgs = z.strictObject({
  pattern: z
    .string()
    .min(1)
    .describe(
      'Regular expression in RE2 syntax (as JavaScript writes it, but no lookahead, lookbehind or backreferences), searched in each line.',
    ),
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
  /** Longer lines are matched on their first this many characters (default 65,536, what the engine matches). */
  readonly maxMatchedLineChars?: number;
}

const NO_BACKTRACKING =
  'grep matches with RE2, which has no lookahead, lookbehind or backreferences: match the text itself, or grep for one part and read the lines around it';

export function createGrepTool(options: GrepToolOptions = {}): BuiltinTool {
  const maxMatches = options.maxMatches ?? 200;
  const maxLineChars = options.maxLineChars ?? 300;
  const maxFileBytes = options.maxFileBytes ?? 8 * 1024 * 1024;
  const maxMatchedLineChars = Math.min(options.maxMatchedLineChars ?? MAX_MATCHED_LENGTH, MAX_MATCHED_LENGTH);
  return {
    schema: toolSchema(
      'grep',
      `Search file contents in the workspace with a regular expression (RE2 syntax). Prints "file:line: text" for each matching line (at most ${maxMatches}); binary files and ${SKIPPED_DIRS.join(', ')} are skipped, and a line longer than ${maxMatchedLineChars} characters is searched in its first ${maxMatchedLineChars}.`,
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
      const { pattern, path = '.', glob, caseInsensitive = false } = parsed.value;
      const problem = re2Problem(pattern, { anywhere: true, ignoreCase: caseInsensitive });
      if (problem !== undefined)
        return fail(`Invalid regular expression /${pattern}/: RE2 cannot run it (${problem}). ${NO_BACKTRACKING}.`);
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
      let longLines = 0;
      const search = {
        pattern,
        ignoreCase: caseInsensitive,
        maxLineChars: maxMatchedLineChars,
        slice: new TimeSlice(),
        signal: context.signal,
      };
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
        let found;
        try {
          found = await searchLines(lines, search, maxMatches + 1 - matches);
        } catch (error) {
          if (!(error instanceof PatternUndecidableError)) throw error;
          return fail(`grep stopped in ${file}: ${error.message}.`);
        }
        longLines += found.longLines;
        for (const index of found.matched) {
          matches++;
          if (matches > maxMatches) break search;
          const raw = lines[index] as string;
          const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
          const text = line.length > maxLineChars ? `${line.slice(0, maxLineChars)} … [cut]` : line;
          out.push(`${file}:${index + 1}: ${text}`);
        }
      }
      const skipped = [
        binary > 0 ? `${binary} binary` : '',
        large > 0 ? `${large} larger than ${maxFileBytes} bytes` : '',
        unreadable > 0 ? `${unreadable} unreadable` : '',
      ].filter((part) => part !== '');
      const notes = [
        skipped.length > 0 ? `[skipped files: ${skipped.join(', ')}]` : '',
        longLines > 0
          ? `[${longLines} line${longLines === 1 ? '' : 's'} longer than ${maxMatchedLineChars} characters: searched in the first ${maxMatchedLineChars} only]`
          : '',
      ].filter((note) => note !== '');
      if (out.length === 0) {
        const where = resolved.relative === '.' ? 'in the workspace' : `in ${resolved.relative}`;
        const searched = `${files.length} file${files.length === 1 ? '' : 's'} searched ${where}`;
        return ok([`No matches for /${pattern}/ (${searched}).`, ...notes].join('\n'));
      }
      if (matches > maxMatches) {
        out.push(`[truncated: showing the first ${maxMatches} matches; narrow the pattern, path or glob]`);
      }
      out.push(...notes);
      return ok(out.join('\n'));
    },
  };
}
