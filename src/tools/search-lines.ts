// Which lines of a file a `grep` pattern matches, on RE2, one line at a time and each line bounded, giving
// the event loop a turn every few milliseconds. Blocks of lines are tried first, in one call each: re2-wasm
// costs microseconds a call, and most blocks of most files hold no match.
import { re2Search } from '../patterns/re2-match.js';
import type { TimeSlice } from './time-slice.js';

/** How many characters of lines one block call looks at (well inside what the engine matches). */
const BLOCK_CHARS = 16_384;

/**
 * RE2 syntax that looks at the very start or end of the text (`\A`, `\z`), or turns multi-line matching off
 * (`(?-m)`): with it, a block can miss what one of its lines matches, so such a pattern goes line by line.
 * Anything else a line matches, the block (with `^` and `$` at line ends, `\n` around the line) matches too.
 */
const TEXT_EDGES = /\\[Az]|\(\?[A-Za-z]*-/;

export interface LineSearch {
  readonly pattern: string;
  readonly ignoreCase: boolean;
  /** Longer lines are matched on their first this many characters. */
  readonly maxLineChars: number;
  readonly slice: TimeSlice;
  readonly signal: AbortSignal;
}

export interface FoundLines {
  /** Indexes of the matching lines, at most `limit` of them. */
  readonly matched: readonly number[];
  /** Lines longer than `maxLineChars` that were looked at. */
  readonly longLines: number;
}

/** The first `limit` lines of `lines` that `search.pattern` matches (RE2 cannot-run errors are the caller's). */
export async function searchLines(lines: readonly string[], search: LineSearch, limit: number): Promise<FoundLines> {
  const { pattern, ignoreCase, maxLineChars, slice, signal } = search;
  const byBlock = !TEXT_EDGES.test(pattern);
  const matched: number[] = [];
  let longLines = 0;
  const turn = async () => {
    if (!slice.overdue()) return;
    await slice.next();
    if (signal.aborted) throw new Error('grep was interrupted');
  };
  const searchBlock = async (block: readonly string[], first: number) => {
    await turn();
    if (byBlock && block.length > 1 && !re2Search(pattern, block.join('\n'), { ignoreCase, multiline: true })) return;
    for (let i = 0; i < block.length && matched.length < limit; i++) {
      await turn();
      if (re2Search(pattern, block[i] as string, { ignoreCase, maxLength: maxLineChars })) matched.push(first + i);
    }
  };
  let block: string[] = [];
  let first = 0;
  let size = 0;
  for (let i = 0; i < lines.length && matched.length < limit; i++) {
    let text = lines[i] as string;
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (text.length > maxLineChars) {
      longLines++;
      text = text.slice(0, maxLineChars);
    }
    if (block.length > 0 && size + text.length + 1 > BLOCK_CHARS) {
      await searchBlock(block, first);
      block = [];
      size = 0;
    }
    if (block.length === 0) first = i;
    block.push(text);
    size += text.length + 1;
  }
  if (block.length > 0 && matched.length < limit) await searchBlock(block, first);
  return { matched, longLines };
}
