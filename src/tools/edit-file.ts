// The `edit_file` tool: replaces one exact occurrence of a text in a workspace file. No match or
// several matches is an error result saying how many and what to do. Not idempotent: a retry after
// a crash may find the text already replaced (and then report "not found").
import { z } from 'zod';
import { type BuiltinTool, fail, ok, parseArgs, toolSchema } from './builtin-tool.js';
import { describeFsError, readTextFile, writeFileAtomic } from './text-file.js';
import { resolveWorkspacePath } from './workspace-path.js';

const EditFileArgs = z.strictObject({
  path: z.string().describe('File path relative to the workspace root.'),
  oldText: z
    .string()
    .min(1)
    .describe('The exact text to replace, including whitespace and indentation; it must occur exactly once.'),
  newText: z.string().describe('The replacement text.'),
});

export function createEditFileTool(): BuiltinTool {
  return {
    schema: toolSchema(
      'edit_file',
      'Replace an exact piece of text in a workspace file. oldText must occur exactly once in the file; include enough surrounding lines to make it unique.',
      EditFileArgs,
    ),
    idempotent: false,
    quick: true,
    concurrencySafe: false,
    requiresApproval: false,
    async run(args, context) {
      const parsed = parseArgs('edit_file', EditFileArgs, args);
      if (!parsed.ok) return parsed.error;
      let { oldText, newText } = parsed.value;
      if (oldText === newText) return fail('oldText and newText are the same: nothing to change.');
      const resolved = await resolveWorkspacePath(context.workspace, parsed.value.path);
      if (!resolved.ok) return fail(resolved.error);
      const shown = resolved.relative;
      const file = await readTextFile(resolved.absolute, shown);
      if (!file.ok) return fail(file.error);
      const text = file.text;

      let offsets = occurrences(text, oldText);
      // Models usually send `\n` line ends; a CRLF file still matches, and the edit keeps its line ends.
      if (offsets.length === 0 && text.includes('\r\n') && !oldText.includes('\r')) {
        const crlfOld = oldText.replace(/\n/g, '\r\n');
        const crlfOffsets = occurrences(text, crlfOld);
        if (crlfOffsets.length > 0) {
          offsets = crlfOffsets;
          oldText = crlfOld;
          newText = newText.replace(/\r?\n/g, '\r\n');
        }
      }
      if (offsets.length === 0) {
        return fail(
          `oldText was not found in ${shown} (0 matches). It must match exactly, including whitespace and indentation: read the file again and copy the text from it.`,
        );
      }
      if (offsets.length > 1) {
        const lines = offsets.slice(0, 10).map((offset) => lineAt(text, offset));
        const more = offsets.length > 10 ? ', …' : '';
        return fail(
          `oldText matches ${offsets.length} times in ${shown} (at lines ${lines.join(', ')}${more}); include more surrounding lines in oldText so that it matches exactly once.`,
        );
      }
      const offset = offsets[0] ?? 0;
      const updated = text.slice(0, offset) + newText + text.slice(offset + oldText.length);
      try {
        await writeFileAtomic(resolved.absolute, updated);
      } catch (error) {
        return fail(describeFsError(error, shown));
      }
      const first = lineAt(text, offset);
      const newLines = newText === '' ? 0 : newText.split('\n').length - (newText.endsWith('\n') ? 1 : 0);
      return ok(
        `Edited ${shown}: replaced 1 occurrence at line ${first}` +
          (newLines > 0 ? ` (the new text is lines ${first}-${first + newLines - 1}).` : ' (the text was removed).'),
      );
    },
  };
}

/** Start offsets of every occurrence of `needle` in `text`, overlapping ones too (each is a possible edit). */
function occurrences(text: string, needle: string): number[] {
  const found: number[] = [];
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) found.push(at);
  return found;
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}
