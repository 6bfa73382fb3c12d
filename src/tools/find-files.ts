// Finds workspace files by glob pattern for `glob` and `grep`. The model writes the pattern, so it is matched
// on RE2 (src/patterns), never by a glob library's backtracking regex: tinyglobby only walks (fixed patterns of
// ours), below the glob's literal leading directories. Symlinks are not followed, and every hit is checked by
// realpath to lie inside the workspace.
import { realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { glob as walk } from 'tinyglobby';
import { globToRe2, hasGlobSyntax } from '../patterns/glob-to-re2.js';
import { PatternUndecidableError, re2Match, re2Problem } from '../patterns/re2-match.js';
import { TimeSlice } from './time-slice.js';
import { isInside, toRelative } from './workspace-path.js';

/** Directories skipped unless the pattern names them: VCS data, dependencies, the shell's temp dir. */
export const SKIPPED_DIRS = ['.git', 'node_modules', '.dh-tmp'] as const;

export type FoundFiles =
  { readonly ok: true; readonly files: readonly string[] } | { readonly ok: false; readonly error: string };

/**
 * Files matching `pattern` below `dir` (absolute, resolved, inside `root`), as paths relative to
 * `root`, sorted. Refuses absolute patterns, `..` segments and glob syntax RE2 cannot run before touching
 * the disk.
 */
export async function findFiles(root: string, dir: string, pattern: string, signal?: AbortSignal): Promise<FoundFiles> {
  const refused = (problem: string): FoundFiles => ({
    ok: false,
    error: `Refused pattern ${JSON.stringify(pattern)}: ${problem}.`,
  });
  const problem = patternProblem(pattern);
  if (problem) return refused(problem);
  // A leading "./" names the directory itself, as it did for tinyglobby.
  let glob = pattern;
  while (glob.startsWith('./')) glob = glob.slice(2);
  const translated = globToRe2(glob, { paths: true });
  if (!translated.ok) return refused(translated.problem);
  const unrunnable = re2Problem(translated.source);
  if (unrunnable !== undefined) return refused(`RE2 cannot run it (${unrunnable})`);

  const { base, depth } = walkScope(glob);
  const start = resolve(dir, base);
  // The walk starts where the glob's literal part leads; through a symlink out of the workspace it lists nothing.
  const real = await realpath(start).catch(() => undefined);
  if (real === undefined || !isInside(root, real)) return { ok: true, files: [] };
  const kind = await stat(real).catch(() => undefined);
  // The literal part names a file: the glob may still match it (`dir/**` is `dir` too).
  if (kind?.isFile() === true && base !== '' && pathMatches(translated.source, base))
    return { ok: true, files: [toRelative(root, start)] };
  if (kind?.isDirectory() !== true) return { ok: true, files: [] };
  // The walker's own patterns are these fixed ones, never the model's.
  const ignore = SKIPPED_DIRS.filter((name) => !pattern.includes(name)).map((name) => `**/${name}/**`);
  const walked = await walk('**', {
    cwd: start,
    dot: true,
    followSymbolicLinks: false,
    expandDirectories: false,
    onlyFiles: true,
    ignore,
    ...(depth !== undefined ? { deep: depth } : {}),
    ...(signal ? { signal } : {}),
  });

  const slice = new TimeSlice();
  const hits: string[] = [];
  for (const path of walked) {
    if (slice.overdue()) {
      await slice.next();
      signal?.throwIfAborted();
    }
    const fromDir = base === '' ? path : `${base}/${path}`;
    if (pathMatches(translated.source, fromDir)) hits.push(fromDir);
  }
  const files: string[] = [];
  for (let i = 0; i < hits.length; i += 64) {
    const batch = hits.slice(i, i + 64).map(async (hit) => {
      const absolute = resolve(dir, hit);
      if (!isInside(root, absolute)) return undefined;
      // The walk may have started inside a symlinked directory: check where files really are.
      const realFile = await realpath(absolute).catch(() => undefined);
      if (realFile === undefined || !isInside(root, realFile)) return undefined;
      return toRelative(root, absolute);
    });
    for (const file of await Promise.all(batch)) if (file !== undefined) files.push(file);
  }
  return { ok: true, files: files.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)) };
}

function pathMatches(source: string, path: string): boolean {
  try {
    return re2Match(source, path);
  } catch (error) {
    // A path longer than the engine matches: no glob a model writes is meant for it.
    if (error instanceof PatternUndecidableError) return false;
    throw error;
  }
}

/**
 * Where to walk for `glob`: below its leading segments without glob syntax (`src/b` of `src/b/*.ts`), and
 * at most as many directories deep as the rest has `/` (none for `*.ts`), unless it has a `**`.
 */
function walkScope(glob: string): { base: string; depth: number | undefined } {
  const segments = glob.split('/');
  let literal = 0;
  while (literal < segments.length - 1 && !hasGlobSyntax(segments[literal] as string)) literal++;
  const rest = segments.slice(literal).join('/');
  return {
    base: segments.slice(0, literal).join('/'),
    depth: rest.includes('**') ? undefined : rest.split('/').length - 1,
  };
}

function patternProblem(pattern: string): string | undefined {
  if (pattern.trim() === '') return 'it is empty';
  if (pattern.includes('\0')) return 'it contains a NUL byte';
  if (pattern.startsWith('/') || pattern.startsWith('~')) return 'patterns are relative to the workspace root';
  // `..` as a segment, also as a brace alternative (`{..,src}/x`); `{1..9}` ranges are refused by the translation.
  if (pattern.split(/[/\\{},]/).some((token) => token === '..')) {
    return '".." would leave the workspace';
  }
  if (pattern.startsWith('!')) return 'negated patterns are not supported';
  return undefined;
}
