// The `shell` tool: `bash -c` in the session's workspace, in its own process group (killed whole on
// interrupt, on timeout, and when the command exits leaving children behind), with an environment built
// from scratch (nothing of the worker's: no API keys) and capped output. Under bubblewrap when it works
// (shell-sandbox.ts). WITHOUT A SANDBOX the command can touch the whole host as the worker's user, so the
// tool is marked `requiresApproval` and the approval plugin defaults to `ask` for it.
import { spawn } from 'node:child_process';
import { mkdir, realpath } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import type { ToolOutput } from '../plugins/contracts.js';
import { DhError } from '../core/index.js';
import { type BuiltinTool, fail, messageOf, parseArgs, toolSchema } from './builtin-tool.js';
import { type BwrapSandboxOptions, bwrapArgs, INSTALL_BUBBLEWRAP, probeBwrap } from './shell-sandbox.js';

export type ShellSandbox = 'auto' | 'bwrap' | 'none';

export interface ShellToolOptions extends BwrapSandboxOptions {
  /** `auto` (default): bwrap if it works here, else unsandboxed with approval. `bwrap`: required. */
  readonly sandbox?: ShellSandbox;
  /** Default timeout of a command (60 s). */
  readonly defaultTimeoutMs?: number;
  /** Largest timeout a call may ask for (10 min). */
  readonly maxTimeoutMs?: number;
  /** Output kept, stdout and stderr together (64 KiB): the first and the last half. */
  readonly maxOutputBytes?: number;
  /** Between SIGTERM and SIGKILL of the process group (2 s). */
  readonly killGraceMs?: number;
  /** Extra environment variables, given explicitly by the composition root (never copied from the worker). */
  readonly env?: Readonly<Record<string, string>>;
}

export interface ShellTool extends BuiltinTool {
  /** Where commands run: under bwrap, or directly on the host. */
  readonly sandbox: 'bwrap' | 'none';
  /** Why bwrap is not used, when `sandbox: 'auto'` fell back to none. */
  readonly sandboxUnavailable?: string;
}

/** `sandbox: 'bwrap'` was required and bubblewrap does not work on this host. */
export class SandboxUnavailableError extends DhError {
  constructor(reason: string) {
    super('SANDBOX_UNAVAILABLE', `the shell sandbox (bubblewrap) is not usable: ${reason}`, { reason });
  }
}

/** Unsandboxed commands get this temp dir (inside the workspace); sandboxed ones a private `/tmp`. */
export const SHELL_TMP_DIR = '.dh-tmp';

export function createShellTool(options: ShellToolOptions = {}): ShellTool {
  const mode = options.sandbox ?? 'auto';
  const defaultTimeoutMs = options.defaultTimeoutMs ?? 60_000;
  const maxTimeoutMs = options.maxTimeoutMs ?? 600_000;
  const maxOutputBytes = options.maxOutputBytes ?? 64 * 1024;
  const killGraceMs = options.killGraceMs ?? 2_000;

  let sandboxed = false;
  let unavailable: string | undefined;
  if (mode !== 'none') {
    const probe = probeBwrap(options);
    if (probe.available) sandboxed = true;
    else if (mode === 'bwrap') throw new SandboxUnavailableError(probe.reason);
    else unavailable = probe.reason;
  }

  const ShellArgs = z.strictObject({
    command: z.string().min(1).describe('The bash command line to run.'),
    timeoutMs: z
      .number()
      .int()
      .min(1)
      .max(maxTimeoutMs)
      .optional()
      .describe(
        `Kill the command after this many milliseconds (default ${defaultTimeoutMs}, at most ${maxTimeoutMs}).`,
      ),
  });
  const where = sandboxed
    ? `in a sandbox: only the workspace is writable (plus a private /tmp)${options.network === true ? '' : ', there is no network'}`
    : 'directly on the host';
  const description =
    `Run a bash command with the workspace as the working directory, ${where}. ` +
    'Returns stdout and stderr together and the exit code; background processes are ended when the command exits. ' +
    'Non-interactive: stdin is empty.';

  return {
    schema: toolSchema('shell', description, ShellArgs),
    idempotent: false,
    concurrencySafe: false,
    requiresApproval: !sandboxed,
    sandbox: sandboxed ? 'bwrap' : 'none',
    ...(unavailable === undefined ? {} : { sandboxUnavailable: unavailable }),
    async run(args, context): Promise<ToolOutput> {
      const parsed = parseArgs('shell', ShellArgs, args);
      if (!parsed.ok) return parsed.error;
      const { command, timeoutMs = defaultTimeoutMs } = parsed.value;
      if (context.signal.aborted) return fail('Interrupted before the command started.');
      let workspace: string;
      try {
        workspace = await realpath(context.workspace);
      } catch (error) {
        return fail(`The workspace is not available (${messageOf(error)}).`);
      }
      const env = shellEnv(workspace, sandboxed, options.env);
      if (!sandboxed) await mkdir(join(workspace, SHELL_TMP_DIR), { recursive: true });
      const [file, argv] = sandboxed
        ? [options.bwrapPath ?? 'bwrap', [...bwrapArgs(workspace, options), '--', 'bash', '-c', command]]
        : ['bash', ['-c', command]];
      return runCommand(file, argv, {
        cwd: workspace,
        env,
        timeoutMs,
        maxOutputBytes,
        killGraceMs,
        signal: context.signal,
      });
    },
  };
}

/**
 * The command's whole environment, from scratch: nothing is inherited from the worker, whose
 * environment holds provider API keys and database credentials.
 */
export function shellEnv(
  workspace: string,
  sandboxed: boolean,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const path = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
  const nodeDir = dirname(process.execPath);
  if (!path.includes(nodeDir)) path.unshift(nodeDir);
  return {
    PATH: path.join(':'),
    HOME: workspace,
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    SHELL: '/bin/bash',
    TMPDIR: sandboxed ? '/tmp' : join(workspace, SHELL_TMP_DIR),
    PAGER: 'cat',
    GIT_PAGER: 'cat',
    GIT_TERMINAL_PROMPT: '0',
    NO_COLOR: '1',
    ...extra,
  };
}

interface RunOptions {
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  readonly killGraceMs: number;
  readonly signal: AbortSignal;
}

/** Runs `file argv` as the leader of a new process group and reports output, exit and who ended it. */
function runCommand(file: string, argv: readonly string[], options: RunOptions): Promise<ToolOutput> {
  return new Promise((resolve) => {
    const output = new OutputBuffer(options.maxOutputBytes);
    let ended: 'timeout' | 'interrupt' | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    let closeTimer: NodeJS.Timeout | undefined;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;

    const child = spawn(file, argv, {
      cwd: options.cwd,
      env: options.env,
      detached: true, // a new session and process group: the whole tree can be signalled at once
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const killGroup = (signal: NodeJS.Signals): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, signal);
      } catch {
        // ESRCH: the group is already gone
      }
    };
    const endGroup = (): void => {
      killGroup('SIGTERM');
      graceTimer ??= setTimeout(() => killGroup('SIGKILL'), options.killGraceMs);
    };
    const stop = (why: 'timeout' | 'interrupt'): void => {
      ended ??= why;
      endGroup();
    };
    const timer = setTimeout(() => stop('timeout'), options.timeoutMs);
    const onAbort = (): void => stop('interrupt');
    options.signal.addEventListener('abort', onAbort, { once: true });

    const finish = (result: ToolOutput): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(closeTimer);
      // The SIGKILL that follows a SIGTERM still fires for stragglers that ignore SIGTERM.
      graceTimer?.unref();
      options.signal.removeEventListener('abort', onAbort);
      resolve(result);
    };

    child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    child.on('error', (error) => {
      finish(fail(`Could not start ${file}: ${error.message}${file === 'bwrap' ? ` (${INSTALL_BUBBLEWRAP})` : ''}`));
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // Children left behind (`server &`) go with the command; they also hold the pipes open.
      endGroup();
      // A process that left the group (setsid) can keep the pipes open forever: stop waiting for it.
      closeTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish(report(exit, ended, output, options.timeoutMs));
      }, options.killGraceMs + 1_000);
    });
    child.on('close', () => finish(report(exit, ended, output, options.timeoutMs)));
  });
}

function report(
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined,
  ended: 'timeout' | 'interrupt' | undefined,
  output: OutputBuffer,
  timeoutMs: number,
): ToolOutput {
  const text = output.render();
  const lines = text === '' ? ['(no output)'] : [text.endsWith('\n') ? text.slice(0, -1) : text];
  if (ended === 'timeout') {
    lines.push(`[timed out after ${timeoutMs} ms: the command and its child processes were killed]`);
    return fail(lines.join('\n'));
  }
  if (ended === 'interrupt') {
    lines.push('[interrupted: the command and its child processes were killed]');
    return fail(lines.join('\n'));
  }
  if (exit?.code !== null && exit?.code !== undefined) {
    lines.push(`[exit code ${exit.code}]`);
    return { status: exit.code === 0 ? 'ok' : 'error', output: lines.join('\n') };
  }
  lines.push(`[killed by signal ${exit?.signal ?? 'unknown'}]`);
  return fail(lines.join('\n'));
}

/** Keeps the first and the last half of a byte stream, counting what falls in between. */
class OutputBuffer {
  private readonly half: number;
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private total = 0;

  constructor(maxBytes: number) {
    this.half = Math.max(1, Math.floor(maxBytes / 2));
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.headBytes < this.half) {
      const take = Math.min(this.half - this.headBytes, chunk.length);
      this.head.push(chunk.subarray(0, take));
      this.headBytes += take;
      chunk = chunk.subarray(take);
      if (chunk.length === 0) return;
    }
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    while (this.tail.length > 1 && this.tailBytes - (this.tail[0]?.length ?? 0) >= this.half) {
      this.tailBytes -= this.tail.shift()?.length ?? 0;
    }
  }

  render(): string {
    const head = Buffer.concat(this.head).toString('utf8');
    let tail = Buffer.concat(this.tail);
    const omitted = this.total - this.headBytes - Math.min(this.tailBytes, this.half);
    if (tail.length > this.half) tail = tail.subarray(tail.length - this.half);
    if (omitted <= 0) return head + tail.toString('utf8');
    return (
      `${head}\n[truncated: ${omitted} bytes of output omitted (${this.total} in all); showing the first ` +
      `${this.headBytes} and the last ${tail.length} bytes]\n${tail.toString('utf8')}`
    );
  }
}
