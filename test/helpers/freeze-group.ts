// Makes a process group as slow as a loaded machine can make it, deterministically: SIGSTOP until /proc shows
// it stopped, SIGCONT to let it go on. Every group frozen here is remembered, so a test's cleanup can thaw
// whatever a failed assertion left stopped.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { signalGroup } from '../../src/local-stack/signal-group.js';

const frozen = new Set<number>();

/** Stops `pid`'s process group; true once /proc shows the leader stopped (state T), false if it never does. */
export async function freezeGroup(pid: number): Promise<boolean> {
  signalGroup(pid, 'SIGSTOP');
  frozen.add(pid);
  for (let i = 0; i < 100; i++) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2)[0] === 'T') return true;
    await sleep(100);
  }
  return false;
}

/** Lets a frozen group go on. */
export function thawGroup(pid: number): void {
  signalGroup(pid, 'SIGCONT');
  frozen.delete(pid);
}

/** Thaws every group still frozen (for afterEach). */
export function thawAll(): void {
  for (const pid of [...frozen]) thawGroup(pid);
}
