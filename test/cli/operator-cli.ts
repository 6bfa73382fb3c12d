// Runs `node bin/dh.mjs …` as a child process with a controlled environment (a temp DH_HOME, no
// inherited Temporal or provider settings), for the operator-command tests.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const DH_BIN = join(REPO_ROOT, 'bin', 'dh.mjs');

export interface DhResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The parent's environment without anything that would point `dh` at another home, cluster or provider. */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith('DH_') || key.startsWith('TEMPORAL_')) continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

export function runDh(args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<DhResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [DH_BIN, ...args],
      { cwd: REPO_ROOT, env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

export function tempHome(prefix = 'dh-cli-'): { home: string; cleanup(): void } {
  const home = mkdtempSync(join(tmpdir(), prefix));
  return { home, cleanup: () => rmSync(home, { recursive: true, force: true }) };
}

/** Explains a failed run in an assertion message. */
export function describeRun(result: DhResult): string {
  return `exit ${result.code}\n--- stdout ---\n${result.stdout.slice(-4000)}\n--- stderr ---\n${result.stderr.slice(-4000)}`;
}

export interface DhWorker {
  readonly pid: number;
  stop(): Promise<void>;
  output(): string;
}

/** Starts `node bin/dh.mjs worker` in its own process group and waits for its ready file. */
export async function startDhWorker(env: NodeJS.ProcessEnv, readyFile: string, timeoutMs = 90_000): Promise<DhWorker> {
  const child = spawn(process.execPath, [DH_BIN, 'worker'], {
    cwd: REPO_ROOT,
    env: { ...env, DH_WORKER_READY_FILE: readyFile },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-8_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  const pid = child.pid ?? -1;
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-pid, name);
    } catch {
      // Gone.
    }
  };
  const deadline = Date.now() + timeoutMs;
  while (!(existsSync(readyFile) && readFileSync(readyFile, 'utf8').trim() === String(pid))) {
    if (exited || Date.now() > deadline) {
      signal('SIGKILL');
      throw new Error(`the dh worker did not get ready (exited: ${exited})\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    pid,
    output: () => output,
    stop: async () => {
      if (exited) return;
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), 10_000);
      await exit;
      clearTimeout(timer);
    },
  };
}
