// One long build step of a cached tool (`go install`, `pip install`) in a process group of its own: its
// output's tail kept for the error, a progress tick while it runs, and the whole group killed at a deadline.
import { spawn } from 'node:child_process';
import { signalGroup } from './signal-group.js';

const OUTPUT_TAIL_CHARS = 6_000;

export interface BuildStepOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly timeoutMs: number;
  /** Called every `progressEveryMs` with the whole minutes elapsed. */
  readonly onProgress?: (minutes: number) => void;
  readonly progressEveryMs?: number;
}

/** The step did not succeed: `how` is `exit N`, the signal, or why it could not start; `tail` its last output. */
export class BuildStepFailed extends Error {
  constructor(
    readonly how: string,
    readonly tail: string,
    options?: ErrorOptions,
  ) {
    super(`build step failed (${how})`, options);
  }
}

export function runBuildStep(file: string, args: readonly string[], options: BuildStepOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let tail = '';
    const keep = (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const started = Date.now();
    const ticker = options.onProgress
      ? setInterval(
          () => options.onProgress?.(Math.round((Date.now() - started) / 60_000)),
          options.progressEveryMs ?? 60_000,
        )
      : undefined;
    const timer = setTimeout(() => {
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
    }, options.timeoutMs);
    const settle = (error: BuildStepFailed | null) => {
      clearInterval(ticker);
      clearTimeout(timer);
      if (error) reject(error);
      else resolve();
    };
    child.on('error', (error) =>
      settle(new BuildStepFailed(`could not run ${file}: ${error.message}`, '', { cause: error })),
    );
    child.on('close', (code, signal) =>
      settle(code === 0 ? null : new BuildStepFailed(signal ?? `exit ${code}`, tail.trim())),
    );
  });
}
