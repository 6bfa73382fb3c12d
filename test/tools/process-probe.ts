// Looks at host processes through /proc, to check that a tool's processes are really gone.
import { existsSync, readdirSync, readFileSync } from 'node:fs';

/** Alive = exists and is not a zombie (an orphan's zombie may wait for a slow reaper in containers). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Pids of live `sleep <duration>` processes (see `uniqueSleep`). */
export function sleepers(duration: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (!existsSync(`/proc/${name}/cmdline`)) continue;
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ');
      if (cmdline === `sleep ${duration} ` && isAlive(Number(name))) pids.push(Number(name));
    } catch {
      // gone while we looked
    }
  }
  return pids;
}

/** Waits until `check` is true (polling), up to `ms`. */
export async function waitFor(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A unique `sleep` duration, so the sleeping process can be found by its command line. */
export function uniqueSleep(): string {
  return `${300 + Math.floor(Math.random() * 600)}.${String(process.pid)}${String(Date.now() % 100000)}`;
}
