// Small tools for scenario tests: deterministic, observable, and cancellable like real ones.
import { appendFileSync } from 'node:fs';
import type { ToolDefinition } from '../../src/plugins/contracts.js';
import type { ToolSchema } from '../../src/core/index.js';

const objectSchema = (properties: ToolSchema['parameters']): ToolSchema['parameters'] => ({
  type: 'object',
  properties,
  additionalProperties: false,
});

/** Echoes its `text` argument. Idempotent and quick (runs in the model step on the session's host). */
export const echoTool: ToolDefinition = {
  schema: { name: 'echo', description: 'Echo the text back.', parameters: objectSchema({ text: { type: 'string' } }) },
  idempotent: true,
  quick: true,
  readOnly: true,
  run: (args) =>
    Promise.resolve({ status: 'ok', output: `echo: ${JSON.stringify((args as { text?: unknown }).text ?? '')}` }),
};

/**
 * Waits `ms` milliseconds (honouring cancellation), appending a line to `runLog` when it starts, so
 * tests can count runs. Not idempotent: a crash mid-run must not make it run twice.
 */
export function sleepTool(runLog: string): ToolDefinition {
  return {
    schema: {
      name: 'sleep',
      description: 'Wait some milliseconds.',
      parameters: objectSchema({ ms: { type: 'number' } }),
    },
    idempotent: false,
    run: (args, context) =>
      new Promise((resolve, reject) => {
        appendFileSync(runLog, `${context.callId}\n`);
        const ms = Number((args as { ms?: unknown }).ms ?? 0);
        const timer = setTimeout(() => resolve({ status: 'ok', output: `slept ${ms} ms` }), ms);
        context.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(new Error('aborted'));
        });
      }),
  };
}

/** Always fails: the model must see an error result, the step must not crash. */
export const failTool: ToolDefinition = {
  schema: { name: 'fail', description: 'Fails.', parameters: objectSchema({}) },
  idempotent: true,
  run: () => Promise.reject(new Error('this tool always fails')),
};

/**
 * `sleep` declared idempotent, under the name `nap`: a crash that leaves its outcome unknown makes the
 * retry run it again (its run log then shows two lines for the call).
 */
export function idempotentSleepTool(runLog: string): ToolDefinition {
  const sleep = sleepTool(runLog);
  return {
    ...sleep,
    schema: { ...sleep.schema, name: 'nap', description: 'Wait some milliseconds (safe to repeat).' },
    idempotent: true,
  };
}

/**
 * A slow tool declared quick, as `quick_<name>`: the model step's activity runs it on the session's host, so
 * a crash or an interrupt can land while a tool runs inside the model step.
 */
export function quickVariant(tool: ToolDefinition): ToolDefinition {
  return { ...tool, schema: { ...tool.schema, name: `quick_${tool.schema.name}` }, quick: true };
}

/** The message `count_up` reports with its `n`th update: distinctive, so tests can look for any trace of it. */
export const progressMessage = (n: number): string => `progress-note-${n}-of-3`;

export interface ProgressToolOptions {
  /** Between two updates, and after the last (default 300: wider than the 250 ms throttle, so each passes). */
  readonly spacingMs?: number;
  /** Awaited after the `n`th update, before the next one (and before returning): e.g. until a viewer showed it. */
  readonly reached?: (n: number) => Promise<void>;
}

/**
 * `count_up`: reports progress 1/3, 2/3, 3/3 with `progressMessage(n)` while it runs, spaced out, then
 * returns `counted to 3` (no progress message in its output). Honours cancellation. Idempotent.
 */
export function progressTool(options: ProgressToolOptions = {}): ToolDefinition {
  const spacingMs = options.spacingMs ?? 300;
  return {
    schema: { name: 'count_up', description: 'Count to three, slowly.', parameters: objectSchema({}) },
    idempotent: true,
    run: async (_args, context) => {
      for (let n = 1; n <= 3; n++) {
        context.progress?.({ progress: n, total: 3, message: progressMessage(n) });
        const paused = Promise.all([new Promise((resolve) => setTimeout(resolve, spacingMs)), options.reached?.(n)]);
        await new Promise<void>((resolve, reject) => {
          const abort = () => reject(new Error('aborted'));
          context.signal.addEventListener('abort', abort, { once: true });
          paused.then(
            () => {
              context.signal.removeEventListener('abort', abort);
              resolve();
            },
            (error: unknown) => {
              context.signal.removeEventListener('abort', abort);
              reject(error instanceof Error ? error : new Error(String(error)));
            },
          );
        });
      }
      return { status: 'ok', output: 'counted to 3' };
    },
  };
}
