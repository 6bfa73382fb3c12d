// The OS sandbox of the `shell` tool: bubblewrap (`bwrap`, Debian package `bubblewrap`). The root
// filesystem is read-only, the session's workspace is the one writable place (besides a private /tmp),
// other sessions' workspaces and the worker's home and checkout are hidden, and there is no network.
// Without a working bwrap, `sandbox: 'auto'` runs the shell unsandboxed and marks it `requiresApproval`:
// the approval plugin then defaults to `ask` for every shell call.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { isInside } from './workspace-path.js';

/** The apt command that makes `bwrap` available on Debian/Ubuntu. */
export const INSTALL_BUBBLEWRAP = 'apt-get install -y bubblewrap';

export interface BwrapSandboxOptions {
  /** `bwrap` executable (default: `bwrap` on PATH). */
  readonly bwrapPath?: string;
  /**
   * Share the host network (default false). Off by default because the host's loopback reaches the
   * worker's own services (the Temporal frontend, PostgreSQL), from which a command could reach other
   * sessions; with it off the sandbox has only its own loopback.
   */
  readonly network?: boolean;
  /**
   * More host directories to hide behind an empty read-only tmpfs. Always hidden: the workspace's
   * parent (other sessions' workspaces), `/root`, `/home`, the worker's home and working directory
   * (checkouts and `.env` files), except where that would hide the system itself.
   */
  readonly hide?: readonly string[];
}

/**
 * The bwrap arguments (everything before `--`) for a command in `workspace` (absolute and resolved).
 * Order matters: hiding tmpfs mounts go on top of the read-only root, then the workspace (and the Node
 * installation, if it was hidden) is bound back on top of them, then the hiding mounts become read-only
 * so that `cd .. && touch x` fails instead of writing into a throwaway tmpfs.
 */
export function bwrapArgs(workspace: string, options: BwrapSandboxOptions = {}): string[] {
  const hidden = hiddenDirs(workspace, options.hide ?? []);
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'];
  for (const dir of hidden) args.push('--tmpfs', dir);
  const nodePrefix = dirname(dirname(process.execPath));
  if (hidden.some((dir) => isInside(dir, nodePrefix))) args.push('--ro-bind', nodePrefix, nodePrefix);
  args.push('--bind', workspace, workspace);
  for (const dir of hidden) args.push('--remount-ro', dir);
  args.push('--chdir', workspace, '--unshare-all');
  if (options.network === true) args.push('--share-net');
  // Root in the sandbox keeps its capabilities unless dropped, and could then unmount the hiding tmpfs.
  args.push('--cap-drop', 'ALL', '--die-with-parent', '--new-session');
  return args;
}

/**
 * System paths that must stay visible: hiding one of them (or an ancestor) would break every command.
 * Node is not among them: when it lives in a hidden directory (nvm under the home) it is bound back.
 */
const SYSTEM_PATHS = ['/usr', '/bin', '/sbin', '/lib', '/lib64', '/etc', '/dev', '/proc', '/sys'];

/** The directories to cover, deduplicated, parents before children. */
function hiddenDirs(workspace: string, extra: readonly string[]): string[] {
  const wanted = [dirname(workspace), '/root', '/home', homedir(), process.cwd(), ...extra];
  const dirs = new Set<string>();
  for (const candidate of wanted) {
    let dir: string;
    try {
      dir = realpathSync(candidate);
    } catch {
      continue; // missing: nothing to hide
    }
    if (dir === '/' || dir === '/tmp') continue; // `/tmp` is already a private tmpfs
    if (isInside(workspace, dir)) continue; // inside the workspace: the workspace is the point
    if (SYSTEM_PATHS.some((path) => isInside(dir, path))) continue;
    dirs.add(dir);
  }
  return [...dirs].sort((a, b) => a.split('/').length - b.split('/').length || (a < b ? -1 : 1));
}

export type BwrapProbe =
  { readonly available: true; readonly bwrapPath: string } | { readonly available: false; readonly reason: string };

const probes = new Map<string, BwrapProbe>();

/**
 * Whether bwrap works here, found by running a trivial command under the same arguments the shell
 * uses (with a throwaway workspace): installed but unusable (no user namespaces in a container) is the
 * common failure, and only running it tells. Synchronous and memoized: it runs once, at startup.
 */
export function probeBwrap(options: BwrapSandboxOptions = {}): BwrapProbe {
  const bwrapPath = options.bwrapPath ?? 'bwrap';
  const key = JSON.stringify([bwrapPath, options.network === true, options.hide ?? []]);
  const known = probes.get(key);
  if (known) return known;
  const probe = runProbe(bwrapPath, options);
  probes.set(key, probe);
  return probe;
}

function runProbe(bwrapPath: string, options: BwrapSandboxOptions): BwrapProbe {
  const parent = realpathSync(mkdtempSync(join(tmpdir(), 'dh-bwrap-probe-')));
  try {
    const workspace = join(parent, 'workspace');
    mkdirSync(workspace);
    const run = spawnSync(
      bwrapPath,
      [...bwrapArgs(workspace, options), '--', '/bin/sh', '-c', 'echo sandboxed > probe && test ! -w /usr'],
      { env: { PATH: '/usr/local/bin:/usr/bin:/bin' }, encoding: 'utf8', timeout: 15_000 },
    );
    if (run.error) {
      const code = (run.error as NodeJS.ErrnoException).code;
      return {
        available: false,
        reason:
          code === 'ENOENT'
            ? `bubblewrap is not installed (no "${bwrapPath}" on PATH); install it: ${INSTALL_BUBBLEWRAP}`
            : `bubblewrap could not be started: ${run.error.message}`,
      };
    }
    const wrote =
      existsSync(join(workspace, 'probe')) && readFileSync(join(workspace, 'probe'), 'utf8') === 'sandboxed\n';
    if (run.status === 0 && wrote) return { available: true, bwrapPath };
    const stderr = run.stderr.trim();
    const userns = /namespace|Operation not permitted|setting up uid map|Permission denied/i.test(stderr);
    return {
      available: false,
      reason:
        `bubblewrap is installed but a sandboxed command failed (exit ${run.status ?? run.signal}): ${stderr || 'no message'}` +
        (userns
          ? '. The kernel or container does not allow the namespaces bwrap needs: allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), or run the container with a seccomp/AppArmor profile that permits unshare.'
          : ''),
    };
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
}
