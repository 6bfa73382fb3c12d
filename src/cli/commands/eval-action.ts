// What `dh eval` does; eval-command.ts defines it and loads this module when it runs. It chooses the
// sessions, plans the steps, starts the eval workflow, shows its progress and prints the report.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { WorkflowHandle } from '@temporalio/client';
import { DhError, ErrorCode } from '../../core/index.js';
import { parseEvalChangeText, describeEvalChange, EVAL_CHANGE_INVALID } from '../../eval/eval-change.js';
import { EVAL_SESSION_PREFIX } from '../../eval/eval-log.js';
import { countSentSteps } from '../../eval/count-sent-steps.js';
import { buildEvalReport } from '../../eval/eval-report.js';
import { planEvalTargets } from '../../eval/plan-eval.js';
import {
  EvalChange,
  evalProgressQuery,
  evalWorkflowId,
  MAX_EVAL_STEPS,
  type EvalProgress,
  type EvalRunInput,
  type EvalRunResult,
} from '../../shared/eval-contracts.js';
import { sessionWorkflowId } from '../../shared/session-messages.js';
import type { SessionStore } from '../../stores/session-store.js';
import { cliAction } from '../cli-action.js';
import { openCliContext, type CliContext } from '../cli-context.js';
import { usageError } from '../exit-codes.js';
import { writeErr, writeOut } from '../operator/cli-io.js';
import { renderEvalReport } from '../operator/render-eval.js';
import { renderEvalProgress } from '../operator/render-eval-progress.js';
import type { EvalOptions } from './eval-options.js';
import type { evalRun } from '../../workflows/eval-workflow.js';

export const evalCommand = cliAction(async (sessions: string[], options: EvalOptions): Promise<number> => {
  if (options.show !== undefined) return await showRun(options.show, options);
  const change = changeFrom(options);
  if (sessions.length === 0 && options.query === undefined && options.since === undefined) {
    throw usageError('name the sessions to evaluate, or choose them with --query or --since');
  }
  const since = options.since !== undefined ? parseAge(options.since) : undefined;
  if (!options.continue && (options.allowTool.length > 0 || options.maxSteps !== undefined)) {
    throw usageError('--allow-tool and --max-steps go with --continue');
  }
  const at = options.at ?? (options.continue ? 'turn' : 'step');
  const runId = options.runId ?? newRunId();
  if (!/^[A-Za-z0-9._-]{1,60}$/.test(runId)) throw usageError('--run-id uses 1-60 of [A-Za-z0-9._-]');
  const ctx = await openCliContext();
  try {
    const chosen = await chooseSessions(ctx, sessions, {
      ...options,
      ...(since !== undefined ? { sinceMs: since } : {}),
    });
    if (chosen.length === 0) throw new DhError('EVAL_NOTHING', 'no session matches: nothing to evaluate');
    const plan = await planEvalTargets((id) => ctx.store.read(id), chosen, { runId, at });
    if (plan.targets.length === 0) {
      throw new DhError(
        'EVAL_NOTHING',
        `no recorded step with an answer in ${chosen.length} session(s): nothing to evaluate`,
      );
    }
    if (plan.targets.length > MAX_EVAL_STEPS) {
      throw usageError(
        `${plan.targets.length} steps is more than one run takes (${MAX_EVAL_STEPS}): choose fewer sessions (--limit, --since) or --at turn`,
      );
    }
    const taskQueue = options.taskQueue ?? ctx.stack.taskQueue;
    const input: EvalRunInput = {
      runId,
      change,
      targets: plan.targets,
      concurrency: options.concurrency,
      ...(options.budget !== undefined ? { budgetUsd: options.budget } : {}),
      at: Date.now(),
      ...(options.continue
        ? {
            mode: 'continue' as const,
            ...(options.allowTool.length > 0 ? { allowTools: options.allowTool } : {}),
            ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
          }
        : {}),
    };
    const handle = await ctx.client.workflow.start<typeof evalRun>('evalRun', {
      taskQueue,
      workflowId: evalWorkflowId(runId),
      args: [input],
    });
    // Named sessions were checked above; one a visibility query found may have its log in another store.
    const missing = plan.sessions.filter((s) => s.missing).map((s) => s.sessionId);
    if (missing.length > 0) {
      writeErr(
        `dh: left out ${missing.length} session(s) Temporal lists but this store holds no log of: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', …' : ''}`,
      );
    }
    const skippedEvals = plan.sessions.filter((s) => s.isEval).length;
    writeErr(
      `dh: eval ${runId}: ${plan.targets.length} steps of ${chosen.length - skippedEvals - missing.length} session(s), change: ${describeEvalChange(change)}` +
        `${skippedEvals > 0 ? ` (${skippedEvals} eval log(s) left out)` : ''}; workflow ${handle.workflowId} on task queue ${taskQueue}`,
    );
    if (options.detach) {
      await writeOut(`${runId}\n`);
      return 0;
    }
    return await report(ctx.store, await follow(ctx.store, handle), options);
  } finally {
    await ctx.close();
  }
});

async function showRun(runId: string, options: EvalOptions): Promise<number> {
  const ctx = await openCliContext({ startWorker: false });
  try {
    const handle = ctx.client.workflow.getHandle<typeof evalRun>(evalWorkflowId(runId));
    await handle.describe().catch((error: unknown) => {
      throw new DhError(
        'EVAL_NOT_FOUND',
        `no eval run "${runId}" on this Temporal namespace`,
        { runId },
        { cause: error },
      );
    });
    return await report(ctx.store, await follow(ctx.store, handle), options);
  } finally {
    await ctx.close();
  }
}

/** Exit 1 when a step failed or a candidate differed in more than the change (never expected). */
async function report(store: SessionStore, result: EvalRunResult, options: EvalOptions): Promise<number> {
  const built = await buildEvalReport(result, (id) => store.read(id));
  await writeOut(options.json ? `${JSON.stringify(built, null, 2)}\n` : renderEvalReport(built));
  return built.counts.failed > 0 || built.beyondTheChange > 0 ? 1 : 0;
}

/** Waits for the run, printing its progress on stderr whenever it moves. */
async function follow(store: SessionStore, handle: WorkflowHandle<typeof evalRun>): Promise<EvalRunResult> {
  let finished = false;
  const result = handle.result().finally(() => {
    finished = true;
  });
  let last = '';
  while (!finished) {
    const line = await progressNow(store, handle).catch(() => null);
    if (line !== null && line !== last) writeErr(`dh: ${line}`);
    last = line ?? last;
    await Promise.race([result.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 1000))]);
  }
  const done = await result;
  const answered = done.outcomes.filter((o) => o.status === 'answered');
  const count = (status: string) => done.outcomes.filter((o) => o.status === status).length;
  const counts = {
    total: done.outcomes.length,
    done: done.outcomes.length,
    answered: answered.length,
    skipped: count('skipped'),
    failed: count('failed'),
    spentUsd: done.spentUsd,
    unpriced: answered.filter((o) => o.costUsd == null).length,
  };
  writeErr(`dh: ${renderEvalProgress(counts)}`);
  return done;
}

/** The run's progress line now: the workflow's counts, and which of its running steps the store shows sent. */
async function progressNow(store: SessionStore, handle: WorkflowHandle<typeof evalRun>): Promise<string> {
  const progress: EvalProgress = await handle.query(evalProgressQuery);
  const sent = await countSentSteps((id, fromSeq) => store.read(id, fromSeq), progress.runningSteps);
  return renderEvalProgress(progress, { sent, waiting: progress.running - sent });
}

/** The change from the flags and the change file (flags win). */
function changeFrom(options: EvalOptions): EvalChange {
  const fromFile =
    options.headerChange !== undefined ? parseEvalChangeText(readText(options.headerChange), options.headerChange) : {};
  const merged = {
    ...fromFile,
    ...(options.model !== undefined ? { model: options.model } : {}),
    ...(options.provider !== undefined ? { provider: options.provider } : {}),
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    ...(options.system !== undefined ? { system: readText(options.system) } : {}),
  };
  const parsed = EvalChange.safeParse(merged);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw usageError(`the change: ${issue?.path.join('.') || 'it'}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new DhError(
      EVAL_CHANGE_INVALID,
      `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
}

/** `7d`, `12h`, `30m`, `45s` in milliseconds. */
function parseAge(text: string): number {
  const match = /^(\d+)(d|h|m|s)$/.exec(text.trim());
  if (!match) throw usageError(`--since "${text}" is not an age like 7d, 12h, 30m or 45s`);
  const unit = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 }[match[2] as 'd' | 'h' | 'm' | 's'];
  return Number(match[1]) * unit;
}

function newRunId(): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 13);
  return `eval-${stamp}-${randomBytes(3).toString('hex')}`;
}

async function chooseSessions(
  ctx: CliContext,
  named: readonly string[],
  options: EvalOptions & { sinceMs?: number },
): Promise<string[]> {
  const chosen = new Set<string>();
  for (const id of named) {
    await ctx.store.head(id).catch((error: unknown) => {
      if (error instanceof DhError && error.code === ErrorCode.SessionNotFound) {
        throw new DhError(ErrorCode.SessionNotFound, `no session "${id}" in the store`, { sessionId: id });
      }
      throw error;
    });
    chosen.add(id);
  }
  if (options.sinceMs !== undefined) {
    const cutoff = Date.now() - options.sinceMs;
    let after: { createdAt: number; sessionId: string } | undefined;
    let found = 0;
    for (;;) {
      const page = await ctx.store.list({ limit: 100, ...(after !== undefined ? { after } : {}) });
      for (const s of page) {
        if (s.createdAt < cutoff || found >= options.limit) return [...chosen];
        if (s.sessionId.startsWith(EVAL_SESSION_PREFIX)) continue;
        chosen.add(s.sessionId);
        found++;
      }
      const last = page.at(-1);
      if (page.length < 100 || last === undefined) break;
      after = { createdAt: last.createdAt, sessionId: last.sessionId };
    }
  }
  if (options.query !== undefined) {
    const prefix = sessionWorkflowId('');
    let found = 0;
    try {
      for await (const execution of ctx.client.workflow.list({
        query: `WorkflowType = 'agentSession' AND (${options.query})`,
      })) {
        if (!execution.workflowId.startsWith(prefix)) continue;
        const id = execution.workflowId.slice(prefix.length);
        if (chosen.has(id)) continue;
        chosen.add(id);
        if (++found >= options.limit) break;
      }
    } catch (error) {
      throw new DhError(
        'EVAL_QUERY_INVALID',
        `--query: ${error instanceof Error ? error.message : String(error)}`,
        {},
        { cause: error },
      );
    }
  }
  return [...chosen];
}
