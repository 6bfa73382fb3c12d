// The local stack's processes as recorded in stack.json: is a recorded pid still the process we started,
// and stopping one with its whole process group.
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { signalGroup } from './signal-group.js';

const STOP_GRACE_MS = 10_000;

/**
 * The pid is alive and is what we started (on Linux its command line is checked, so a recycled pid or
 * an exited-but-unreaped child does not count).
 */
export function isOurProcess(pid: number, kind: 'temporal' | 'worker'): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const procFile = `/proc/${pid}/cmdline`;
  if (!existsSync('/proc/self/cmdline')) return true;
  try {
    const cmdline = readFileSync(procFile, 'utf8').split('\0');
    return kind === 'temporal'
      ? cmdline.includes('start-dev')
      : cmdline.some((a) => a.endsWith('dh.mjs')) && cmdline.includes('worker');
  } catch {
    return false;
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A zombie (exited, not yet reaped by its parent) has an empty command line.
  try {
    return !existsSync('/proc/self/cmdline') || readFileSync(`/proc/${pid}/cmdline`).length > 0;
  } catch {
    return false;
  }
}

/** SIGTERM to the process group, SIGKILL after a grace period. */
export async function stopGroup(pid: number): Promise<void> {
  signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + STOP_GRACE_MS;
  while (alive(pid) && Date.now() < deadline) await sleep(100);
  signalGroup(pid, 'SIGKILL');
  const hard = Date.now() + 2_000;
  while (alive(pid) && Date.now() < hard) await sleep(50);
}
