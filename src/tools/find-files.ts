// Finds workspace files by glob pattern for `glob` and `grep` (tinyglobby: no system tools needed).
// Symlinks are not followed, and every hit is checked by realpath to lie inside the workspace.
import { realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import { glob } from 'tinyglobby';
import { isInside, toRelative } from './workspace-path.js';

/** Directories skipped unless the pattern names them: VCS data, dependencies, the shell's temp dir. */
export const SKIPPED_DIRS = ['.git', 'node_modules', '.dh-tmp'] as const;

export type FoundFiles =
  { readonly ok: true; readonly files: readonly string[] } | { readonly ok: false; readonly error: string };

/**
 * Files matching `pattern` below `dir` (absolute, resolved, inside `root`), as paths relative to
 * `root`, sorted. Refuses absolute patterns and `..` segments before touching the disk.
 */
export async function findFiles(root: string, dir: string, pattern: string, signal?: AbortSignal): Promise<FoundFiles> {
  const problem = patternProblem(pattern);
  if (problem) return { ok: false, error: `Refused pattern ${JSON.stringify(pattern)}: ${problem}.` };
  const ignore = SKIPPED_DIRS.filter((name) => !pattern.includes(name)).map((name) => `**/${name}/**`);
  const hits = await glob(pattern, {
    cwd: dir,
    dot: true,
    followSymbolicLinks: false,
    expandDirectories: false,
    onlyFiles: true,
    ignore,
    ...(signal ? { signal } : {}),
  });
  const files: string[] = [];
  for (let i = 0; i < hits.length; i += 64) {
    const batch = hits.slice(i, i + 64).map(async (hit) => {
      const absolute = resolve(dir, hit);
      if (!isInside(root, absolute)) return undefined;
      // A pattern that names a symlinked directory makes the walker enter it: check where files really are.
      const real = await realpath(absolute).catch(() => undefined);
      if (real === undefined || !isInside(root, real)) return undefined;
      return toRelative(root, absolute);
    });
    for (const file of await Promise.all(batch)) if (file !== undefined) files.push(file);
  }
  return { ok: true, files: files.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)) };
}

function patternProblem(pattern: string): string | undefined {
  if (pattern.trim() === '') return 'it is empty';
  if (pattern.includes('\0')) return 'it contains a NUL byte';
  if (pattern.startsWith('/') || pattern.startsWith('~')) return 'patterns are relative to the workspace root';
  // `..` as a segment, also as a brace alternative (`{..,src}/x`); `{1..9}` ranges are fine.
  if (pattern.split(/[/\\{},]/).some((token) => token === '..')) {
    return '".." would leave the workspace';
  }
  if (pattern.startsWith('!')) return 'negated patterns are not supported';
  return undefined;
}
