// A real temp directory per test for the built-in tools: a workspace, a sibling workspace and an
// "outside" directory next to it, plus a ToolContext for the workspace.
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ToolContext, ToolDefinition, ToolOutput } from '../../src/plugins/contracts.js';

export interface ToolFixture {
  /** The common parent of the workspaces (like `<tmpdir>/dh-workspaces`). */
  readonly parent: string;
  readonly workspace: string;
  /** Another session's workspace, next to this one, holding `secret.txt`. */
  readonly sibling: string;
  /** A directory outside the workspace, holding `secret.txt`. */
  readonly outside: string;
  context(signal?: AbortSignal): ToolContext;
  run(tool: ToolDefinition, args: unknown, signal?: AbortSignal): Promise<ToolOutput>;
  write(path: string, content: string): void;
  read(path: string): string;
  /** `ws/link` → outside dir, `ws/link-file` → outside/secret.txt, `ws/dangling` → outside/missing.txt. */
  addEscapeLinks(): void;
  cleanup(): void;
}

export const SECRET = 'top-secret-content';

export function createToolFixture(): ToolFixture {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'dh-tools-test-')));
  const parent = join(base, 'workspaces');
  const workspace = join(parent, 'session-a');
  const sibling = join(parent, 'session-b');
  const outside = join(base, 'outside');
  for (const dir of [workspace, sibling, outside]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(outside, 'secret.txt'), `${SECRET}\n`);
  writeFileSync(join(sibling, 'secret.txt'), `${SECRET}\n`);
  const context = (signal?: AbortSignal): ToolContext => ({
    sessionId: 'session-a',
    callId: 'call-1',
    workspace,
    signal: signal ?? new AbortController().signal,
  });
  return {
    parent,
    workspace,
    sibling,
    outside,
    context,
    run: (tool, args, signal) => tool.run(args, context(signal)),
    write(path, content) {
      const full = join(workspace, path);
      mkdirSync(join(full, '..'), { recursive: true });
      writeFileSync(full, content);
    },
    read: (path) => readFileSync(join(workspace, path), 'utf8'),
    addEscapeLinks() {
      symlinkSync(outside, join(workspace, 'link'));
      symlinkSync(join(outside, 'secret.txt'), join(workspace, 'link-file'));
      symlinkSync(join(outside, 'missing.txt'), join(workspace, 'dangling'));
    },
    cleanup: () => rmSync(base, { recursive: true, force: true }),
  };
}

/** The outside directory's entries (to check nothing was created there). */
export function entries(dir: string): string[] {
  return readdirSync(dir).sort();
}
