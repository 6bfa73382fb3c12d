// The one resolver every built-in tool uses for a model-given path: relative paths only, no `..`
// escape, no symlink (in any component) that leads outside the workspace. Bad input is a result.
import { lstat, realpath } from 'node:fs/promises';
import { isAbsolute, join, posix, relative, sep } from 'node:path';
import { messageOf } from './builtin-tool.js';

export type WorkspacePath =
  | {
      readonly ok: true;
      /** Absolute path with every existing component resolved (symlinks followed, all inside the workspace). */
      readonly absolute: string;
      /** The same path relative to the workspace root (`.` for the root itself), for messages. */
      readonly relative: string;
      /** The workspace root, resolved (realpath). */
      readonly root: string;
      /** Whether the path exists now. */
      readonly exists: boolean;
    }
  | { readonly ok: false; readonly error: string };

/**
 * Resolves `given` inside `workspace`. Refuses absolute paths, paths that climb out with `..`, and
 * paths whose deepest existing ancestor (realpath: every symlink on the way followed) lies outside
 * the workspace, or that end in a dangling symlink (writing through it could create a file anywhere).
 * Never throws.
 */
export async function resolveWorkspacePath(workspace: string, given: string): Promise<WorkspacePath> {
  if (given.includes('\0')) return refuse(given, 'contains a NUL byte');
  if (given.trim() === '')
    return { ok: false, error: 'The path is empty. Give a path relative to the workspace root.' };
  let root: string;
  try {
    root = await realpath(workspace);
  } catch (error) {
    return { ok: false, error: `The workspace is not available (${messageOf(error)}).` };
  }
  if (isAbsolute(given)) {
    const inside = relative(root, given);
    const hint =
      inside !== '' && !inside.startsWith('..') && !isAbsolute(inside)
        ? ` Use ${JSON.stringify(inside.split(sep).join('/'))} instead.`
        : '';
    return refuse(given, 'is absolute; paths must be relative to the workspace root', hint);
  }
  const normalized = posix.normalize(given.split('\\').join('/'));
  if (normalized === '..' || normalized.startsWith('../')) return refuse(given, 'leads outside the workspace');
  const parts = normalized.split('/').filter((part) => part !== '' && part !== '.');

  // Walk up from the full path to the deepest component that exists; realpath resolves every symlink
  // above it. Components below it do not exist, so they cannot be symlinks.
  for (let depth = parts.length; depth >= 0; depth--) {
    const candidate = join(root, ...parts.slice(0, depth));
    let isLink: boolean;
    try {
      isLink = (await lstat(candidate)).isSymbolicLink();
    } catch (error) {
      if (isMissing(error)) continue;
      return refuse(given, `cannot be checked (${messageOf(error)})`);
    }
    let real: string;
    try {
      real = await realpath(candidate);
    } catch (error) {
      if (isLink && isMissing(error)) return refuse(given, 'goes through a symlink whose target does not exist');
      return refuse(given, `cannot be resolved (${messageOf(error)})`);
    }
    if (!isInside(root, real)) return refuse(given, 'goes through a symlink that leads outside the workspace');
    const absolute = join(real, ...parts.slice(depth));
    return {
      ok: true,
      absolute,
      relative: toRelative(root, absolute),
      root,
      exists: depth === parts.length,
    };
  }
  return { ok: false, error: 'The workspace root does not exist.' };
}

/** Whether `path` (absolute, resolved) is `root` or below it. */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** `path` relative to `root` with forward slashes, `.` for the root. */
export function toRelative(root: string, path: string): string {
  const rel = relative(root, path);
  return rel === '' ? '.' : rel.split(sep).join('/');
}

function refuse(given: string, why: string, hint = ''): { ok: false; error: string } {
  return { ok: false, error: `Refused path ${JSON.stringify(given)}: it ${why}.${hint}` };
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
