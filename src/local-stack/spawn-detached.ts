// Starting a long-lived child process that outlives its parent: spawned detached (its own process group,
// so the whole group can be stopped later) with stdout and stderr appended to a log file, then polled
// until it is ready or has exited (the policy: wait-while-alive.ts).
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { waitWhileAlive } from './wait-while-alive.js';

export interface SpawnDetachedOptions {
  readonly env: NodeJS.ProcessEnv;
  /** Gets the child's stdout and stderr, appended. */
  readonly logFile: string;
  /** Default true: the parent may exit while the child runs; false keeps the parent alive until it exits. */
  readonly unref?: boolean;
}

export interface DetachedChild {
  readonly pid: number;
  readonly logFile: string;
  /** Size of the log file before the child started: where its own output begins. */
  readonly logStart: number;
  /** How it ended (a signal, `exit N`, or the spawn error's message); null while it runs. */
  readonly exit: string | null;
  /** Settles with how it ended. */
  readonly exited: Promise<string>;
}

/** Spawns the child; undefined when the OS gave it no pid (the command could not be run). */
export async function spawnDetached(
  command: string,
  args: readonly string[],
  options: SpawnDetachedOptions,
): Promise<DetachedChild | undefined> {
  const logStart = await fileSize(options.logFile);
  const out = openSync(options.logFile, 'a');
  let child;
  try {
    child = spawn(command, args, { detached: true, stdio: ['ignore', out, out], env: options.env });
  } finally {
    // The child has its own copy of the descriptor.
    closeSync(out);
  }
  const pid = child.pid;
  let exit: string | null = null;
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => resolve((exit = signal ?? `exit ${code}`)));
    child.once('error', (error) => resolve((exit = error.message)));
  });
  if (options.unref ?? true) child.unref();
  if (pid === undefined) return undefined;
  return {
    pid,
    logFile: options.logFile,
    logStart,
    get exit() {
      return exit;
    },
    exited,
  };
}

export interface WaitUntilReadyOptions {
  /** One probe; the child's exit fails the wait at once (see `onExit`). */
  readonly isReady: () => Promise<boolean>;
  /** The ceiling: while the child is alive the wait goes on, up to this long. */
  readonly timeoutMs: number;
  readonly pollMs: number;
  /** Progress lines every 10 s while it waits, naming `what` ("the background worker"). */
  readonly progress?: { readonly what: string; readonly log: (line: string) => void };
  /** The error to throw when the child exited before it was ready. */
  readonly onExit: (how: string) => Promise<Error>;
  /** The error to throw when it is not ready at the ceiling (after stopping it, if the caller wants). */
  readonly onTimeout: () => Promise<Error>;
}

/** Polls until the child is ready; throws `onExit`'s error once it ends, `onTimeout`'s at the ceiling. */
export async function waitUntilReady(child: DetachedChild, options: WaitUntilReadyOptions): Promise<void> {
  await waitWhileAlive({
    what: options.progress?.what ?? `process ${child.pid}`,
    pid: child.pid,
    exited: child.exited,
    isReady: options.isReady,
    ceilingMs: options.timeoutMs,
    pollMs: options.pollMs,
    outputBytes: async () => (await fileSize(child.logFile)) - child.logStart,
    ...(options.progress ? { progress: options.progress.log } : {}),
    onExit: options.onExit,
    onCeiling: options.onTimeout,
  });
}

/** What was appended to `path` from byte offset `from` on, at most its last 3,000 characters. */
export async function readLogTail(path: string, from: number): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.slice(from).slice(-3_000);
}

async function fileSize(path: string): Promise<number> {
  return stat(path).then(
    (s) => s.size,
    () => 0,
  );
}
