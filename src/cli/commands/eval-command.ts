// `dh eval`: send recorded steps again with a declared change (another model, system prompt, tool set,
// temperature) and diff the answers; a durable run on Temporal. `dh eval --show <run>` prints a run's report.
import { InvalidArgumentError, type Command } from 'commander';
import { parseSessionId } from '../operator/cli-io.js';
import type { EvalOptions } from './eval-options.js';

export function registerEvalCommand(program: Command): void {
  program
    .command('eval')
    .description(
      'send recorded steps again with a declared change (model, system prompt, tools, temperature) and diff the answers',
    )
    .argument('[sessions...]', 'the sessions whose steps to send again', (value: string, all: string[] = []) => [
      ...all,
      parseSessionId(value),
    ])
    .option('--query <visibility>', 'the sessions a Temporal visibility query finds, e.g. \'DhSessionStatus="idle"\'')
    .option('--since <age>', 'the sessions created in the last <age> (e.g. 7d, 12h, 30m)')
    .option('--model <id>', 'the candidate model')
    .option('--provider <name>', 'the candidate provider profile (a worker serving it must take the run: --task-queue)')
    .option('--temperature <t>', 'the candidate temperature', parseNumber)
    .option('--system <file>', 'a file with the candidate system prompt (replaces the recorded one)')
    .option(
      '--header-change <file>',
      'a JSON or YAML change: model, provider, temperature, topP, maxTokens, system, tools, addTools, removeTools',
    )
    .option(
      '--at <granularity>',
      "every step, or each turn's first step: step | turn (default: step; turn with --continue)",
      parseAt,
    )
    .option('--continue', 'run the rest of each turn on the candidate, its tools in a throw-away copy of the workspace')
    .option(
      '--allow-tool <name>',
      'with --continue: also run this tool although not idempotent (or an MCP tool, `mcp__<server>` for all of one); repeatable',
      (value: string, all: string[]) => [...all, value],
      [] as string[],
    )
    .option('--max-steps <n>', 'with --continue: the most steps a continued turn takes (default 20)', parsePositive)
    .option('--concurrency <n>', 'steps in flight at once', parsePositive, 4)
    .option('--budget <usd>', "what the run may spend, by the worker's pricing table (never exceeded)", parseNumber)
    .option(
      '--task-queue <queue>',
      "the task queue of the workers that send the candidates (default: the local stack's)",
    )
    .option(
      '--run-id <id>',
      "the run's id (default: eval-<date>-<random>); the same id resumes nothing new: runs are unique",
    )
    .option('--limit <n>', 'with --since or --query: at most this many sessions', parsePositive, 200)
    .option('--show <run>', 'print the report of a run (waits for it when it is still running)')
    .option('--detach', 'start the run and print its id without waiting')
    .option('--json', 'print the report as JSON')
    // Loaded on use: `dh --help` does not pay for the eval's imports.
    .action((sessions: string[], options: EvalOptions) =>
      import('./eval-action.js').then((a) => a.evalCommand(sessions, options)),
    );
}

function parseNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new InvalidArgumentError('expected a non-negative number');
  return n;
}

function parsePositive(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

function parseAt(value: string): 'step' | 'turn' {
  if (value !== 'step' && value !== 'turn') throw new InvalidArgumentError('expected step or turn');
  return value;
}
