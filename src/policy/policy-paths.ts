// The path facts a policy judges by: each `inside` predicate's argument and directory resolved in the
// session's workspace the way the tools resolve them (no `..` escape, symlinks followed). Gathered once
// per call and logged in its verdict, so re-judging later uses the same facts, not today's disk.
import { realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import type { PolicyRule } from '../core/policy-rule.js';
import { resolveWorkspacePath } from '../tools/workspace-path.js';
import { pointerGet } from './json-pointer.js';
import { ruleMayMatchTool } from './tool-pattern.js';

/** `arg:<pointer>` and `dir:<directory>` → the workspace-relative resolved path, or null (outside, refused). */
export type PathFacts = Readonly<Record<string, string | null>>;

export const argKey = (pointer: string): string => `arg:${pointer}`;
export const dirKey = (directory: string): string => `dir:${directory}`;

/** The call's arguments as JSON, or undefined when they are not (no predicate holds then). */
export function parseArguments(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}

/** The facts the rules for this tool look at (`inside` predicates' arguments and directories). */
export function pathFactKeys(rules: readonly PolicyRule[], name: string): string[] {
  const keys = new Set<string>();
  for (const rule of rules) {
    if (!ruleMayMatchTool(rule, name)) continue;
    for (const predicate of rule.when ?? []) {
      if (predicate.inside === undefined) continue;
      keys.add(dirKey(predicate.inside));
      keys.add(argKey(predicate.arg));
    }
  }
  return [...keys];
}

/** Resolves every path an `inside` predicate of a rule for this tool would look at. */
export async function gatherPathFacts(
  rules: readonly PolicyRule[],
  name: string,
  args: unknown,
  workspace: string,
): Promise<PathFacts> {
  const facts: Record<string, string | null> = {};
  for (const rule of rules) {
    if (!ruleMayMatchTool(rule, name)) continue;
    for (const predicate of rule.when ?? []) {
      if (predicate.inside === undefined) continue;
      const dir = dirKey(predicate.inside);
      if (!(dir in facts)) facts[dir] = await resolvePolicyPath(workspace, predicate.inside);
      const arg = argKey(predicate.arg);
      if (arg in facts) continue;
      const value = pointerGet(args, predicate.arg);
      facts[arg] = typeof value === 'string' ? await resolvePolicyPath(workspace, value) : null;
    }
  }
  return facts;
}

/**
 * A path as the workspace holds it: relative to the workspace root with "/" (`.` for the root), every
 * existing component resolved; null when it leads outside or cannot be resolved. An absolute path counts
 * only when it lies inside the workspace (MCP servers take absolute paths).
 */
export async function resolvePolicyPath(workspace: string, given: string): Promise<string | null> {
  let path = given;
  if (isAbsolute(given)) {
    const inside = await relativeInside(workspace, given);
    if (inside === null) return null;
    path = inside;
  }
  const resolved = await resolveWorkspacePath(workspace, path);
  return resolved.ok ? resolved.relative : null;
}

async function relativeInside(workspace: string, absolute: string): Promise<string | null> {
  const roots = [resolve(workspace)];
  const real = await realpath(workspace).catch(() => undefined);
  if (real !== undefined) roots.push(real);
  for (const root of roots) {
    const rel = relative(root, resolve(absolute));
    if (rel === '') return '.';
    if (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel)) return rel;
  }
  return null;
}
