// Reads what the docs test checks out of a markdown file: its headings (as GitHub slugs them), its relative
// links, its code (fenced blocks and inline spans), the `dh …` commands written in that code, DH_* names, and the
// fenced blocks of one language (the TypeScript a page shows, for a test that compiles it).

export interface MarkdownLink {
  readonly line: number;
  /** As written, e.g. `../docs/cli.md#exit-codes`. */
  readonly target: string;
}

export interface CodeText {
  readonly line: number;
  readonly text: string;
}

export interface DhMention {
  readonly line: number;
  /** The command path as written: `['mcp', 'ls']`, `['run']`, or `[]` for bare `dh --help`. */
  readonly words: readonly string[];
  /** The `--long` flags written after it, before the next command or shell separator. */
  readonly flags: readonly string[];
  /** The text the mention was read from, for the failure message. */
  readonly source: string;
}

interface Line {
  readonly n: number;
  readonly text: string;
  readonly fenced: boolean;
  /** In a block fenced as ```text: a program's output, not something to type. */
  readonly output: boolean;
}

const FENCE = /^\s*(```|~~~)\s*([\w-]*)/;

/** Every line, marked whether it sits in a fenced code block (the fence lines themselves count as fenced). */
function lines(markdown: string): Line[] {
  let open: string | null = null;
  let output = false;
  return markdown.split('\n').map((text, i) => {
    const match = FENCE.exec(text);
    const fence = match?.[1] ?? null;
    if (open === null && fence !== null) {
      open = fence;
      output = match?.[2] === 'text';
      return { n: i + 1, text, fenced: true, output };
    }
    if (open !== null) {
      const line = { n: i + 1, text, fenced: true, output };
      if (fence === open) open = null;
      return line;
    }
    return { n: i + 1, text, fenced: false, output: false };
  });
}

export interface FencedBlock {
  /** 1-based line of the block's first line of text (the line after its opening fence). */
  readonly line: number;
  /** The fence's info string (`ts`, `sh`, ...; '' without one). */
  readonly lang: string;
  /** The text between the fences, ending in a newline. */
  readonly text: string;
}

/** Every fenced block of `markdown` whose language is one of `langs`, in order. */
export function fencedBlocks(markdown: string, langs: readonly string[]): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  let open: { fence: string; lang: string; line: number; text: string[] } | null = null;
  for (const line of lines(markdown)) {
    const match = FENCE.exec(line.text);
    if (open === null) {
      if (match !== null) open = { fence: match[1] ?? '', lang: match[2] ?? '', line: line.n + 1, text: [] };
      continue;
    }
    if (match?.[1] === open.fence && match[2] === '') {
      if (langs.includes(open.lang))
        blocks.push({ line: open.line, lang: open.lang, text: `${open.text.join('\n')}\n` });
      open = null;
      continue;
    }
    open.text.push(line.text);
  }
  return blocks;
}

/** Inline code spans of one line of prose: single or double backticks, not across lines. */
function codeSpans(text: string): string[] {
  return [...text.matchAll(/(`+)(.+?)\1(?!`)/g)].map((m) => (m[2] ?? '').trim());
}

/**
 * GitHub's anchor for a heading: the rendered text lowercased, every character that is not a letter, a digit,
 * a space, `-` or `_` removed, then each space turned into `-`. Repeats get `-1`, `-2`, … (see `headingSlugs`).
 */
export function githubSlug(heading: string): string {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .replace(/<[^>]+>/g, '')
    .replace(/\*\*|__|\*/g, '')
    .trim();
  return rendered
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a file's headings make, repeats numbered as GitHub numbers them. */
export function headingSlugs(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const slugs = new Set<string>();
  for (const line of lines(markdown)) {
    if (line.fenced) continue;
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line.text)?.[1];
    if (heading === undefined) continue;
    const base = githubSlug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    slugs.add(count === 0 ? base : `${base}-${count}`);
  }
  return slugs;
}

/** Inline links and images outside code, with a target that is not a URL (relative paths and `#anchors`). */
export function relativeLinks(markdown: string): MarkdownLink[] {
  const out: MarkdownLink[] = [];
  for (const line of lines(markdown)) {
    if (line.fenced) continue;
    // Code spans may sit inside a link's text (`[`schemas/`](../schemas/)`), never hold a link that counts.
    const prose = line.text.replace(/(`+)(.+?)\1(?!`)/g, '');
    for (const m of prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1] ?? '';
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      out.push({ line: line.n, target });
    }
  }
  return out;
}

/**
 * Fenced blocks line by line (shell continuations joined) and inline code spans of the prose; blocks fenced as
 * ```text are output (a warning may say "dh commands"), so they are left out.
 */
export function codeTexts(markdown: string): CodeText[] {
  const out: CodeText[] = [];
  let pending: CodeText | null = null;
  for (const line of lines(markdown)) {
    if (line.output) continue;
    if (line.fenced) {
      if (FENCE.test(line.text)) continue;
      const joined: CodeText = pending
        ? { line: pending.line, text: `${pending.text} ${line.text}` }
        : { line: line.n, text: line.text };
      if (/\\\s*$/.test(line.text)) {
        pending = { line: joined.line, text: joined.text.replace(/\\\s*$/, '') };
        continue;
      }
      pending = null;
      out.push({ line: joined.line, text: joined.text });
      continue;
    }
    for (const span of codeSpans(line.text)) out.push({ line: line.n, text: span });
  }
  return out;
}

/** Where a mention's flags end: a shell separator, a comment, a table pipe, or a `/` between two commands. */
const STOP = /^(\||\\\||&&|\|\||;|&|#|\/|or|then)$/;

/** Every `dh <command> [<subcommand>]` written in code, with the flags that follow it. */
export function dhMentions(markdown: string): DhMention[] {
  const out: DhMention[] = [];
  for (const code of codeTexts(markdown)) {
    const starts = [...code.text.matchAll(/(?<![\w./$-])dh(?= +(?:[a-z]|--))/g)].map((m) => m.index);
    starts.forEach((start, i) => {
      const rest = code.text.slice(start + 2, starts[i + 1] ?? code.text.length);
      const tokens = rest.split(/\s+/).filter((t) => t.length > 0);
      const words: string[] = [];
      while (words.length < 2 && /^[a-z][a-z0-9-]*$/.test(tokens[words.length] ?? '')) {
        words.push(tokens[words.length] as string);
      }
      const flags: string[] = [];
      for (const token of tokens.slice(words.length)) {
        if (STOP.test(token)) break;
        const flag = /^[[(]*(--[a-z][a-z0-9-]*)/.exec(token)?.[1];
        if (flag !== undefined) flags.push(flag);
      }
      out.push({ line: code.line, words, flags, source: code.text.trim() });
    });
  }
  return out;
}

/** DH_* names anywhere in a text (prose and code); one ending in `_` is a prefix, as in `DH_BENCH_*`. */
export function dhVariableNames(text: string): string[] {
  return [...text.matchAll(/(?<![A-Za-z0-9_])DH_[A-Z0-9_]+/g)].map((m) => m[0]);
}
