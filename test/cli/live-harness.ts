// Drives `node bin/dh.mjs …` as child processes for the live-CLI tests: one-shot commands with their
// exit code and output, long-running ones (run, attach, worker) with output watchers, and the env of a
// test stack (temp DH_HOME, the run's Temporal server, a scripted provider, a unique task queue).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import {
  startScriptedProvider,
  type ScriptedProvider,
  type StartScriptedProviderOptions,
} from '../../src/scripted-provider/start-scripted-provider.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(REPO_ROOT, 'bin', 'dh.mjs');
export const TEST_MODEL = 'deepseek-chat';
export const KEY_VAR = 'DH_LIVE_TEST_KEY';

/** Children not yet seen to exit: killed when this process exits, so none outlives a failed run. */
const live = new Set<number>();
process.once('exit', () => {
  for (const pid of live) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

export interface DhResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** ms since spawn at which each stdout chunk arrived. */
  readonly stdoutTimes: readonly number[];
  readonly ms: number;
}

export interface DhProcess {
  readonly pid: number;
  readonly result: Promise<DhResult>;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `pattern` in stdout+stderr (rejects if the process exits first or on timeout). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  kill(signal?: NodeJS.Signals): void;
  /** SIGTERM, SIGKILL after `graceMs`; resolves once exited. */
  stop(graceMs?: number): Promise<DhResult>;
}

/** A base environment without anything from the developer's shell that would change dh's behaviour. */
export function cleanEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(DH_|TEMPORAL_|DEEPSEEK_|OPENAI_|OTEL_)/.test(key)) continue;
    env[key] = value;
  }
  return { ...env, NO_COLOR: '1', DH_LOG_LEVEL: 'warn', ...extra };
}

export interface TestStackEnv {
  readonly env: NodeJS.ProcessEnv;
  readonly home: string;
  cleanup(): void;
}

/** Temp DH_HOME, the run's Temporal server, a unique task queue, the scripted provider at `providerUrl`. */
export function testStackEnv(providerUrl: string, extra: NodeJS.ProcessEnv = {}): TestStackEnv {
  const home = mkdtempSync(join(tmpdir(), 'dh-live-'));
  const env = cleanEnv({
    DH_HOME: home,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    DH_TASK_QUEUE: `live-cli-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
    DH_PROVIDER: 'scripted',
    DH_BASE_URL: providerUrl,
    DH_MODEL: TEST_MODEL,
    DH_API_KEY_ENV: KEY_VAR,
    [KEY_VAR]: 'test-key',
    DH_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    DH_SHELL_SANDBOX: 'none',
    ...extra,
  });
  return { env, home, cleanup: () => rmSync(home, { recursive: true, force: true }) };
}

export interface SpawnDhOptions {
  /** `node` runs `node bin/dh.mjs …`; `npx` runs `npx dh …`, the README's form (npm exec in between). */
  readonly via?: 'node' | 'npx';
}

/** `dh …` in a process group of its own (a terminal's Ctrl-C is `process.kill(-pid, 'SIGINT')`, see kill). */
export function spawnDh(args: readonly string[], env: NodeJS.ProcessEnv, options: SpawnDhOptions = {}): DhProcess {
  const started = Date.now();
  const [command, commandArgs] = options.via === 'npx' ? ['npx', ['dh', ...args]] : [process.execPath, [BIN, ...args]];
  const child = spawn(command, commandArgs, {
    cwd: REPO_ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = child.pid ?? -1;
  live.add(pid);
  let stdout = '';
  let stderr = '';
  const stdoutTimes: number[] = [];
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const l of [...listeners]) l();
  };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    stdoutTimes.push(Date.now() - started);
    notify();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    notify();
  });
  let exited = false;
  const result = new Promise<DhResult>((resolve) => {
    child.once('close', (code, signal) => {
      exited = true;
      live.delete(pid);
      notify();
      resolve({ code, signal, stdout, stderr, stdoutTimes, ms: Date.now() - started });
    });
  });
  const kill = (signal: NodeJS.Signals = 'SIGTERM') => {
    if (exited) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // gone
    }
  };
  return {
    pid,
    result,
    stdout: () => stdout,
    stderr: () => stderr,
    kill,
    waitFor: (pattern, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const match = (stdout + stderr).match(pattern);
          if (match) return done(null, match);
          if (exited) done(new Error(`dh ${args.join(' ')} exited before printing ${pattern}`));
        };
        const timer = setTimeout(() => done(new Error(`timed out waiting for ${pattern}`)), timeoutMs);
        const done = (error: Error | null, match?: RegExpMatchArray) => {
          clearTimeout(timer);
          listeners.delete(check);
          if (error) reject(new Error(`${error.message}\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`));
          else resolve(match as RegExpMatchArray);
        };
        listeners.add(check);
        check();
      }),
    stop: async (graceMs = 10_000) => {
      kill('SIGTERM');
      const timer = setTimeout(() => kill('SIGKILL'), graceMs);
      const r = await result;
      clearTimeout(timer);
      return r;
    },
  };
}

/** Runs one command to its end (killed after `timeoutMs`). */
export async function dh(args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<DhResult> {
  const p = spawnDh(args, env);
  const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
  try {
    return await p.result;
  } finally {
    clearTimeout(timer);
  }
}

/** `dh worker` in the background, resolved once it logged `worker ready`. */
export async function startDhWorker(env: NodeJS.ProcessEnv): Promise<DhProcess> {
  const worker = spawnDh(['worker'], { ...env, DH_LOG_LEVEL: 'info' });
  await worker.waitFor(/"msg":"worker ready"/, 90_000);
  return worker;
}

/** A scripted provider, a test stack over it and a `dh worker` on that stack: what most live-CLI suites start. */
export interface LiveStack {
  readonly provider: ScriptedProvider;
  readonly stack: TestStackEnv;
  readonly worker: DhProcess;
  stop(): Promise<void>;
}

export async function startLiveStack(
  script: StartScriptedProviderOptions['script'],
  extra: NodeJS.ProcessEnv = {},
): Promise<LiveStack> {
  const provider = await startScriptedProvider({ script });
  const stack = testStackEnv(provider.url, extra);
  const worker = await startDhWorker(stack.env);
  return {
    provider,
    stack,
    worker,
    stop: async () => {
      await worker.stop();
      await provider.close();
      stack.cleanup();
    },
  };
}

/** The session id `dh run` announces on stderr. */
export async function sessionIdOf(run: DhProcess): Promise<string> {
  const match = await run.waitFor(/dh: session (\S+) /);
  return match[1] as string;
}

/** Explains a failed expectation on a process result. */
export function show(r: DhResult): string {
  return `exit ${r.code} (${r.signal ?? '-'}) after ${r.ms} ms\n--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}`;
}
