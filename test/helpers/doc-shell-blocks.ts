// The shell blocks of a Markdown page, each named by the `<!-- deploy-doc: NAME -->` comment right above its
// fence, so a test can run a page's commands exactly as written; and the `export NAME=VALUE` lines of a
// settings block, whose values a test replaces with its own.

export interface ShellBlock {
  /** The marker's name, or null for an unmarked `sh` block (a page under test should have none). */
  readonly name: string | null;
  /** The block's text between its fences, ending in a newline. */
  readonly text: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
}

const MARKER = /^<!-- deploy-doc: ([a-z0-9-]+) -->$/;

/** Every ```sh / ```bash block of `markdown`, in order, with the marker (if any) above it. */
export function shellBlocks(markdown: string): ShellBlock[] {
  const lines = markdown.split('\n');
  const blocks: ShellBlock[] = [];
  let pending: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const marker = MARKER.exec(line.trim());
    if (marker) {
      pending = marker[1] ?? null;
      continue;
    }
    if (/^```(sh|bash)\s*$/.test(line)) {
      const start = i;
      const body: string[] = [];
      for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i] ?? '');
      if (i >= lines.length) throw new Error(`the shell block at line ${start + 1} is never closed`);
      blocks.push({ name: pending, text: `${body.join('\n')}\n`, line: start + 1 });
      pending = null;
      continue;
    }
    // A marker names the next fence only when nothing but blank lines stands between them.
    if (line.trim() !== '') pending = null;
  }
  return blocks;
}

/**
 * The variables a settings block exports, with the values it writes (as written, quotes and all). Only
 * comments, blank lines and `export NAME=VALUE` lines are allowed: a settings block sets, it does nothing.
 */
export function exportedSettings(block: ShellBlock): Map<string, string> {
  const settings = new Map<string, string>();
  for (const [i, line] of block.text.split('\n').entries()) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const match = /^export ([A-Z_][A-Z0-9_]*)=(\S.*)$/.exec(line);
    if (!match)
      throw new Error(`settings block "${block.name}", line ${block.line + 1 + i}: not \`export NAME=VALUE\``);
    const [, name = '', value = ''] = match;
    if (settings.has(name)) throw new Error(`settings block "${block.name}" exports ${name} twice`);
    settings.set(name, value);
  }
  return settings;
}
