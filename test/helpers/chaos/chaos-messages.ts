// How the chaos harness sends messages: each one carries a message id, so a send whose outcome is
// unknown (the server died mid-call, a retry of the gRPC layer gave up) is simply sent again — the
// session drops the duplicate. Used in-process and by the sender child processes.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SessionClient } from '../../../src/client/session-client.js';
import type { SessionLimits } from '../../../src/shared/session-workflow-input.js';

export type MessageKind = 'followup' | 'steer' | 'inject';

export interface ChaosMessage {
  readonly kind: MessageKind;
  readonly messageId: string;
  readonly content: string;
  /** Wait this long before sending it (after the previous one of the same sender). */
  readonly delayMs?: number;
  /** `cli`: a sender process sends it through the `temporal` CLI binary (its config names one). */
  readonly through?: 'client' | 'cli';
}

/** What test/helpers/chaos/send-messages.ts is given. */
export interface SenderConfig {
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly sessionId: string;
  readonly messages: readonly ChaosMessage[];
  readonly source?: string;
  /** The `temporal` CLI binary, for messages sent `through: 'cli'`. */
  readonly cliPath?: string;
}

/** What a sender reports once a message was accepted (a signal acknowledged by the server). */
export interface AckedMessage {
  readonly kind: MessageKind;
  readonly messageId: string;
  /** Who sent it: `parent`, `child:<pid>`, `cli`. */
  readonly via: string;
  /** Attempts it took (more than one: the server was gone or the call's outcome unknown). */
  readonly attempts: number;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `send` until it succeeds or `deadlineMs` has passed, with a short backoff. Every failure is
 * retried: a chaos run kills the server under the clients, and the message id makes a repeat harmless.
 */
export async function untilSent(send: () => Promise<unknown>, deadlineMs = 120_000): Promise<number> {
  const deadline = Date.now() + deadlineMs;
  for (let attempt = 1; ; attempt++) {
    try {
      await send();
      return attempt;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(Math.min(2_000, 100 * 2 ** Math.min(attempt, 5)));
    }
  }
}

/** Sends one message through a SessionClient (signal; signal-with-start when `start`). */
export async function sendThroughClient(
  sessions: SessionClient,
  sessionId: string,
  message: ChaosMessage,
  options: {
    readonly start?: boolean;
    readonly limits?: Partial<SessionLimits>;
    readonly source?: string;
    readonly via: string;
  },
): Promise<AckedMessage> {
  const send = { messageId: message.messageId, ...(options.source !== undefined ? { source: options.source } : {}) };
  const start = options.start ? { start: true, ...(options.limits ? { limits: options.limits } : {}) } : {};
  const attempts = await untilSent(() =>
    message.kind === 'followup'
      ? sessions.followup(sessionId, message.content, { ...send, ...start })
      : message.kind === 'steer'
        ? sessions.steer(sessionId, message.content, send)
        : sessions.inject(sessionId, message.content, send),
  );
  return { kind: message.kind, messageId: message.messageId, via: options.via, attempts };
}

export interface TemporalCliTarget {
  readonly cliPath: string;
  readonly address: string;
  readonly namespace: string;
  readonly workflowId: string;
}

/** Sends one message as a signal through the `temporal` CLI binary (what a shell script would do). */
export async function sendThroughCli(target: TemporalCliTarget, message: ChaosMessage): Promise<AckedMessage> {
  const input = JSON.stringify({ content: message.content, messageId: message.messageId, source: 'temporal-cli' });
  const attempts = await untilSent(() =>
    runCli(target.cliPath, [
      'workflow',
      'signal',
      '--address',
      target.address,
      '--namespace',
      target.namespace,
      '--workflow-id',
      target.workflowId,
      '--name',
      message.kind,
      '--input',
      input,
    ]),
  );
  return { kind: message.kind, messageId: message.messageId, via: 'cli', attempts };
}

/** Runs the CLI; rejects with its output on a non-zero exit or after `timeoutMs`. */
export function runCli(cliPath: string, args: readonly string[], timeoutMs = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cliPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    // 'close', not 'exit': 'exit' can fire before the child's stdout is drained, and its output is parsed here.
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`temporal ${args.slice(0, 2).join(' ')} exited ${code ?? signal}: ${output.trim()}`));
    });
  });
}

const SENDER_ENTRY = fileURLToPath(new URL('./send-messages.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * Runs test/helpers/chaos/send-messages.ts in a child process (its own client, its own connection) and
 * resolves with what it reports accepted. Rejects when it fails; the messages it reported before count.
 */
export function runSenderProcess(config: SenderConfig, timeoutMs = 180_000): Promise<AckedMessage[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SENDER_ENTRY, JSON.stringify(config)], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4_000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    // 'close', not 'exit': 'exit' can fire before the child's stdout is drained, and its output is parsed here.
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const lines = stdout.split('\n').filter((line) => line.startsWith('{'));
      const acked = lines.map((line) => JSON.parse(line) as AckedMessage);
      if (code === 0 && stdout.split('\n').includes('done')) resolve(acked);
      else {
        const error = new Error(`the sender process exited ${code ?? signal}: ${stderr.trim()}`);
        reject(Object.assign(error, { acked }));
      }
    });
  });
}
