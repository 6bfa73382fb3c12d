// `dh audit <session> --rejudge`: the session's policy verdicts judged again by today's policy file,
// offline (no Temporal; `--ask-evaluators` asks the file's model again); exits 1 when a verdict would be
// decided differently or does not match its call.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { rejudgeVerdicts, type RejudgeReport } from '../../audit/rejudge-verdicts.js';
import { DhError } from '../../core/index.js';
import type { PolicyEvaluator } from '../../policy/consult-evaluators.js';
import { llmPolicyEvaluator } from '../../policy/llm-policy-evaluator.js';
import { loadPolicy, parsePolicy, type Policy } from '../../policy/policy-file.js';
import { openStoreOnly } from '../cli-context.js';
import { CliError } from '../exit-codes.js';
import { ExitCode, writeOut } from './cli-io.js';

export interface RejudgeOptions {
  readonly json?: boolean;
  /** A policy file to judge by instead of the worker's (DH_POLICY or $DH_HOME/policy.json). */
  readonly policy?: string;
  /** Where to resolve paths today's rules look at that a verdict did not record. */
  readonly workspace?: string;
  /** Put calls today's rules leave open to the file's `evaluator.llm` again. */
  readonly askEvaluators?: boolean;
}

export async function rejudgeCommand(sessionId: string, options: RejudgeOptions): Promise<void> {
  const ctx = await openStoreOnly();
  try {
    const policy = await policyToJudgeBy(ctx.config.home, options.policy);
    const evaluators = options.askEvaluators === true ? evaluatorsToAsk(policy) : [];
    const events = await ctx.store.read(sessionId);
    if (events.length === 0)
      throw new DhError('SESSION_NOT_FOUND', `no session "${sessionId}" in ${ctx.config.store}`, { sessionId });
    const kept = join(ctx.config.home, 'workspaces', sessionId);
    const workspace =
      options.workspace !== undefined ? resolve(options.workspace) : existsSync(kept) ? kept : undefined;
    const report = await rejudgeVerdicts({
      sessionId,
      events,
      policy,
      ...(workspace !== undefined ? { workspace } : {}),
      evaluators,
    });
    await writeOut(options.json ? `${JSON.stringify(report, null, 2)}\n` : renderRejudge(report));
    if (!report.ok) process.exitCode = ExitCode.Error;
  } finally {
    await ctx.close();
  }
}

/** The file's own evaluator; plugins' evaluators live in the worker's code, out of the CLI's reach. */
function evaluatorsToAsk(policy: Policy): PolicyEvaluator[] {
  if (policy.evaluator.llm === undefined)
    throw new CliError(`--ask-evaluators: ${policy.file} names no evaluator (evaluator.llm)`, ExitCode.Usage);
  try {
    return [llmPolicyEvaluator(policy.evaluator.llm)];
  } catch (error) {
    throw new CliError(`--ask-evaluators: ${(error as Error).message}`, ExitCode.Usage);
  }
}

async function policyToJudgeBy(home: string, file: string | undefined): Promise<Policy> {
  if (file !== undefined) {
    const path = resolve(file);
    const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
      throw new CliError(`cannot read the policy file ${path} (${error.code ?? error.message})`, ExitCode.Usage);
    });
    return parsePolicy(text, path);
  }
  const policy = await loadPolicy({ home, env: process.env });
  if (policy === undefined)
    throw new CliError(
      `no policy file to re-judge by: pass --policy <file>, set DH_POLICY, or create ${join(home, 'policy.json')}`,
      ExitCode.Usage,
    );
  return policy;
}

export function renderRejudge(report: RejudgeReport): string {
  const lines: string[] = [];
  for (const v of report.verdicts) {
    if (v.status === 'same') continue;
    const was = `${v.recorded.outcome} by ${v.recorded.rule ?? v.recorded.evaluator ?? v.recorded.by} (${v.recorded.version})`;
    const now = v.now === null ? '' : ` → now ${v.now.outcome} by ${v.now.rule ?? v.now.evaluator ?? v.now.by}`;
    lines.push(
      `${v.status.toUpperCase()} seq ${v.seq} ${v.turn}.${v.step} ${v.name} ${v.callId}: was ${was}${now}${v.note !== undefined ? ` — ${v.note}` : ''}`,
    );
  }
  const same = report.verdicts.length - report.differs - report.mismatched - report.undetermined;
  lines.push(
    `${report.verdicts.length} verdict(s) re-judged by ${report.policy.file} (version ${report.policy.version}): ` +
      `${same} same, ${report.differs} differ, ${report.mismatched} inputs mismatch, ${report.undetermined} undetermined`,
  );
  return `${lines.join('\n')}\n`;
}
