// The one wait policy for a process dh starts and then waits on: while it is alive it is slow, not broken
// (a loaded machine), so keep waiting and say so every 10 s; fail at once when it exits; give up only at a
// long ceiling (DH_TEMPORAL_START_TIMEOUT_S for the Temporal dev server, 5 min by default).
import { setTimeout as sleep } from 'node:timers/promises';
import { DhError } from '../core/index.js';

/** The default ceiling of a start wait. */
export const DEFAULT_START_CEILING_MS = 300_000;
/** Seconds to wait for a local Temporal dev server to answer (registered in src/config/env-variables.ts). */
export const TEMPORAL_START_TIMEOUT_ENV = 'DH_TEMPORAL_START_TIMEOUT_S';

const PROGRESS_EVERY_MS = 10_000;

export interface WaitWhileAliveOptions {
  /** Named in the progress lines: "the local Temporal server on 127.0.0.1:7233". */
  readonly what: string;
  readonly pid: number;
  /** Settles with how the process ended (it may have ended before the wait began). */
  readonly exited: Promise<string>;
  /** One probe; a rejection counts as not ready. */
  readonly isReady: () => Promise<boolean>;
  /** Give up after this long even though the process is alive. */
  readonly ceilingMs: number;
  /** Pause between probes. */
  readonly pollMs: number;
  /** Bytes of output the process has written so far: its growth shows a slow start is moving. */
  readonly outputBytes?: () => number | Promise<number>;
  /** Where the progress lines go (default: nowhere). */
  readonly progress?: (line: string) => void;
  readonly progressEveryMs?: number;
  /** The error to throw when the process exited before it was ready. */
  readonly onExit: (how: string) => Error | Promise<Error>;
  /** The error to throw at the ceiling (the caller stops the process if it wants). */
  readonly onCeiling: (waitedMs: number) => Error | Promise<Error>;
}

/** Probes until ready; throws `onExit`'s error as soon as the process ends, `onCeiling`'s at the ceiling. */
export async function waitWhileAlive(options: WaitWhileAliveOptions): Promise<void> {
  const started = Date.now();
  const every = options.progressEveryMs ?? PROGRESS_EVERY_MS;
  let nextProgress = started + every;
  const firstBytes = options.outputBytes ? await options.outputBytes() : 0;
  // Exit wins over a probe or a pause still in flight: a dead process is reported at once.
  const ended = options.exited.then((how) => ({ how }));
  for (;;) {
    const probe = options.isReady().then(
      (ready) => ({ ready }),
      () => ({ ready: false }),
    );
    const outcome = await Promise.race([probe, ended]);
    if ('how' in outcome) throw await options.onExit(outcome.how);
    if (outcome.ready) return;
    const now = Date.now();
    if (now - started >= options.ceilingMs) throw await options.onCeiling(now - started);
    if (options.progress && now >= nextProgress) {
      const growth = options.outputBytes ? `, log +${formatBytes((await options.outputBytes()) - firstBytes)}` : '';
      options.progress(
        `still waiting for ${options.what} (pid ${options.pid}, ${Math.round((now - started) / 1000)} s${growth})`,
      );
      while (nextProgress <= now) nextProgress += every;
    }
    const paused = await Promise.race([sleep(options.pollMs).then(() => null), ended]);
    if (paused !== null) throw await options.onExit(paused.how);
  }
}

/**
 * The ceiling of a local Temporal dev server's start: DH_TEMPORAL_START_TIMEOUT_S seconds (a positive
 * number), else the default; a bad value is an INVALID_CONFIG error naming the variable.
 */
export function temporalStartCeilingMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[TEMPORAL_START_TIMEOUT_ENV];
  if (raw === undefined || raw.trim() === '') return DEFAULT_START_CEILING_MS;
  const seconds = Number(raw.trim());
  if (!/^\d+(\.\d+)?$/.test(raw.trim()) || !Number.isFinite(seconds) || seconds <= 0) {
    throw new DhError(
      'INVALID_CONFIG',
      `invalid configuration: ${TEMPORAL_START_TIMEOUT_ENV}: expected a positive number of seconds, got "${raw}"`,
      { variable: TEMPORAL_START_TIMEOUT_ENV },
    );
  }
  return Math.round(seconds * 1000);
}

/** Seconds for a message: whole ones, or one decimal under 10 s. */
export function formatSeconds(ms: number): string {
  const s = ms / 1000;
  return s >= 10 || Number.isInteger(s) ? String(Math.round(s)) : s.toFixed(1);
}

function formatBytes(bytes: number): string {
  const n = Math.max(0, bytes);
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}
