// An exclusive lock on one entry of the per-user cache (a `mkdir` lock directory with its owner's pid),
// so that concurrent test runs and CLIs build a cached tool once and the others wait for it.
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';

const LOCK_POLL_MS = 1_000;

export interface CacheLockOptions {
  /** What the owner is building, for the waiting line ("the Temporal CLI"). */
  readonly building: string;
  readonly log: (line: string) => void;
  /**
   * A lock older than this belongs to a build that died without cleaning up on another host (on this
   * host a dead owner's pid says so at once). Longer than the slowest cold build. Default 30 min.
   */
  readonly staleAfterMs?: number;
}

interface LockOwner {
  pid: number;
  host: string;
  since: number;
}

/** Takes the lock (waiting while a live owner holds it); resolves with its release. */
export async function acquireCacheLock(lockDir: string, options: CacheLockOptions): Promise<() => Promise<void>> {
  const ownerFile = join(lockDir, 'owner.json');
  const staleAfterMs = options.staleAfterMs ?? 30 * 60_000;
  let announced = false;
  for (;;) {
    try {
      await mkdir(lockDir);
      const owner: LockOwner = { pid: process.pid, host: hostname(), since: Date.now() };
      await writeFile(ownerFile, JSON.stringify(owner));
      return () => rm(lockDir, { recursive: true, force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (await isStale(lockDir, ownerFile, staleAfterMs)) {
      options.log(`removing a stale lock on building ${options.building}: ${lockDir}`);
      await rm(lockDir, { recursive: true, force: true });
      continue;
    }
    if (!announced) {
      options.log(`another process is building ${options.building} (lock ${lockDir}); waiting for it`);
      announced = true;
    }
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
  }
}

async function isStale(lockDir: string, ownerFile: string, staleAfterMs: number): Promise<boolean> {
  const owner = await readFile(ownerFile, 'utf8')
    .then((text) => JSON.parse(text) as Partial<LockOwner>)
    .catch(() => null);
  if (owner === null || typeof owner.pid !== 'number' || typeof owner.since !== 'number') {
    // The owner may be between mkdir and writing the file: judge by the directory's age instead.
    const info = await stat(lockDir).catch(() => null);
    return info !== null && Date.now() - info.mtimeMs > 60_000;
  }
  if (Date.now() - owner.since > staleAfterMs) return true;
  if (owner.host !== hostname()) return false;
  try {
    process.kill(owner.pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
