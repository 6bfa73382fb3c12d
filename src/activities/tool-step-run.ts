// One attempt at a tool step's calls, in model order: each passes the approval gate first (allow / deny /
// ask), consecutive concurrency-safe calls run in parallel, and results are logged in model order. A call
// with a result is skipped; one started by a crashed attempt runs again only if its tool is idempotent.
// A running call's progress goes to the observers (the live channel), throttled, never to the log.
import { CancelledFailure } from '@temporalio/activity';
import {
  addUsage,
  emptyUsage,
  TOOL_OUTCOME_UNKNOWN,
  type EventDraft,
  type EventOf,
  type Session,
  type ToolCall,
} from '../core/index.js';
import type { StepContext, ToolGate, ToolOutput } from '../plugins/contracts.js';
import { rememberedRuleDraft } from '../policy/session-rules.js';
import type {
  ApprovalDecisionInput,
  DelegatedChild,
  PendingApproval,
  PendingDelegation,
  ToolStepInput,
} from '../shared/activity-contracts.js';
import type { ActivityContext } from './activity-context.js';
import { delegatedResultDrafts, pendingFromLog, planDelegation, toolFor } from './delegations.js';
import { failpoint, failpointArmed } from './failpoints.js';
import { mapWithLimit } from './map-with-limit.js';
import { runTool } from './run-tool.js';
import { toolProgressReporter, type ToolProgressReporter } from './tool-progress.js';

/** Parallel tool runs per step. */
const TOOL_POOL = 4;

/** Where a step's calls stopped: a call waits for a decision, or children wait to be run by the workflow. */
export type ToolStepPause =
  { readonly approval: PendingApproval } | { readonly delegations: readonly PendingDelegation[] };

export class ToolStepRun {
  #session: Session;
  #batch: ToolCall[] = [];
  readonly #decisions: ReadonlyMap<string, ApprovalDecisionInput>;
  readonly #delegated: ReadonlyMap<string, DelegatedChild>;
  /** Consecutive delegation calls started and waiting for their children (they run in parallel). */
  #delegations: PendingDelegation[] = [];
  /** What the children whose results this attempt logged spent. */
  readonly childUsage = emptyUsage();

  constructor(
    readonly context: ActivityContext,
    session: Session,
    readonly input: ToolStepInput,
    readonly workspace: string,
    readonly signal: AbortSignal,
    /** This activity's attempt, which tags the calls' progress updates. */
    readonly attempt = 1,
    /** When Temporal scheduled this attempt (epoch ms): orders the progress of attempts of different activities. */
    readonly attemptScheduledAt?: number,
  ) {
    this.#session = session;
    this.#decisions = new Map((input.decisions ?? []).map((d) => [d.callId, d]));
    this.#delegated = new Map((input.delegated ?? []).map((d) => [d.callId, d]));
  }

  /** The session as this attempt has logged it so far (its last batch's results may be staged only). */
  get session(): Session {
    return this.#session;
  }

  stepContext(): StepContext {
    const { sessionId, turn, step } = this.input;
    return { sessionId, turn, step, events: this.session.events };
  }

  /**
   * Runs (or answers) every call without a result. Returns where it stopped: a call that waits for a
   * decision, or delegation calls whose children the workflow runs (it waits durably and calls again with
   * the decision or the children); or null once every call has its result (the last batch's results
   * staged: they reach the store with the step's end).
   */
  async runCalls(calls: readonly ToolCall[]): Promise<ToolStepPause | null> {
    const { runtime } = this.context;
    const { turn, step } = this.input;
    for (const [index, call] of calls.entries()) {
      const state = this.session.state.openStep?.calls.get(call.id);
      if (!state || state.answered) continue;
      const tool = toolFor(runtime, this.session, call.name);
      // Results stay in model order: a call after waiting children waits for them.
      if (this.#delegations.length > 0 && !tool?.delegation) return { delegations: this.#delegations };
      if (state.started && tool?.delegation) {
        await this.#delegatedCall(call);
        continue;
      }
      if (state.started) {
        if (tool?.idempotent) {
          this.#batch.push(call);
          await this.#runBatch();
        } else {
          await this.#append([this.#result(call, 'interrupted', TOOL_OUTCOME_UNKNOWN)]);
        }
        continue;
      }
      let approval = state.approval;
      if (approval === 'none' && tool) {
        const view = { callId: call.id, name: call.name, arguments: call.arguments };
        // The policy's verdict first (a retried attempt acts on the one it logged), then any plugin's gate.
        const verdict = runtime.policy ? (state.verdict ?? (await this.#judge(call))) : null;
        const gate: ToolGate =
          verdict !== null && verdict.outcome !== 'allow'
            ? { decision: verdict.outcome, reason: verdict.reason ?? `the tool policy's verdict is ${verdict.outcome}` }
            : runtime.toolBefore
              ? await runtime.toolBefore(view, this.stepContext())
              : { decision: 'allow' as const };
        if (gate.decision === 'deny') {
          await this.#runBatch();
          await this.#append([this.#result(call, 'error', `The call was denied: ${gate.reason}`)]);
          continue;
        }
        if (gate.decision === 'ask') {
          await this.#runBatch();
          await this.#append([
            {
              type: 'approval/request',
              at: Date.now(),
              turn,
              step,
              callId: call.id,
              name: call.name,
              reason: gate.reason,
            },
          ]);
          approval = 'pending';
        }
      }
      if (approval === 'pending') {
        const decision = this.#decisions.get(call.id);
        if (!decision) {
          await this.#runBatch();
          if (this.#delegations.length > 0) return { delegations: this.#delegations };
          return {
            approval: { callId: call.id, name: call.name, reason: approvalReason(this.session, turn, step, call.id) },
          };
        }
        const remembered =
          decision.remember !== undefined && decision.decision !== 'timeout'
            ? rememberedRuleDraft({
                call,
                decision: decision.decision,
                scope: decision.remember,
                ...(decision.by !== undefined ? { by: decision.by } : {}),
                turn,
                step,
                at: Date.now(),
              })
            : null;
        await this.#append([
          {
            type: 'approval/decision',
            at: Date.now(),
            turn,
            step,
            callId: call.id,
            decision: decision.decision,
            ...(decision.by !== undefined ? { by: decision.by } : {}),
            ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
          },
          // In the same append: a decision is never logged without the rule it asked to remember.
          ...(remembered !== null ? [remembered] : []),
        ]);
        approval = decision.decision;
      }
      if (approval === 'deny' || approval === 'timeout') {
        await this.#runBatch();
        const why =
          approval === 'deny'
            ? 'The call was denied by the approver.'
            : 'No approval arrived in time; the call was not run.';
        await this.#append([this.#result(call, 'error', why)]);
        continue;
      }
      if (tool?.delegation) {
        await this.#runBatch();
        await this.#startDelegation(call, index);
        continue;
      }
      if (!tool?.concurrencySafe) await this.#runBatch();
      this.#batch.push(call);
      if (!tool?.concurrencySafe) await this.#runBatch(index === calls.length - 1);
    }
    if (this.#delegations.length > 0) return { delegations: this.#delegations };
    await this.#runBatch(true);
    return null;
  }

  /**
   * The policy's verdict on a call, staged: it reaches the store with the call's next event (its start, its
   * denied result or its approval request), so judging costs no commit of its own. An attempt that dies
   * before that leaves nothing done, and the next attempt judges again.
   */
  async #judge(call: ToolCall): Promise<EventOf<'policy/verdict'>> {
    const engine = this.context.runtime.policy;
    if (engine === undefined) throw new Error('no tool policy to judge by');
    const draft = await engine.judge({
      call: { callId: call.id, name: call.name, arguments: call.arguments },
      sessionRules: this.session.state.sessionRules.map((e) => e.rule),
      workspace: this.workspace,
      context: this.stepContext(),
      at: Date.now(),
    });
    this.#session = this.context.cache.stage(this.#session, [draft]);
    const verdict = this.session.state.openStep?.calls.get(call.id)?.verdict;
    if (!verdict) throw new Error(`the verdict on ${call.id} was not staged`);
    return verdict;
  }

  /**
   * Logs the call's start naming its child, which then waits for the workflow; or refuses it: a start without
   * a child and the refusal as its result, in one append (so the log shows every call the model asked for).
   */
  async #startDelegation(call: ToolCall, index: number): Promise<void> {
    const { turn, step } = this.input;
    const plan = planDelegation(this.context.runtime, this.session, call, index, turn, step);
    if (!plan.ok) {
      await this.#append([
        { type: 'tool/start', at: Date.now(), turn, step, callId: call.id, name: call.name },
        this.#result(call, 'error', plan.error),
      ]);
      return;
    }
    await this.#append([
      {
        type: 'tool/start',
        at: Date.now(),
        turn,
        step,
        callId: call.id,
        name: call.name,
        child: plan.pending.childSessionId,
      },
    ]);
    this.#delegations.push(plan.pending);
  }

  /** A started delegation call: its ended child's result, or the child still to be run by the workflow. */
  async #delegatedCall(call: ToolCall): Promise<void> {
    const { turn, step } = this.input;
    const ended = this.#delegated.get(call.id);
    if (ended) {
      const { drafts, childUsage } = await delegatedResultDrafts(
        this.context.runtime,
        this.session,
        [ended],
        turn,
        step,
        Date.now(),
      );
      addUsage(this.childUsage, childUsage);
      await this.#append(drafts);
      return;
    }
    const pending = pendingFromLog(this.session, call, turn, step);
    if (pending) this.#delegations.push(pending);
    // A start without a child is logged only with its refusal, in one append; answer any other such start
    // rather than leave it dangling.
    else await this.#append([this.#result(call, 'interrupted', TOOL_OUTCOME_UNKNOWN)]);
  }

  /**
   * Runs the waiting batch. `last`: the step's final batch (nothing runs after it). Its results are staged,
   * not appended: they reach the store in one commit with the step's end, so a steady tool step costs two
   * commits, not three.
   */
  async #runBatch(last = false): Promise<void> {
    if (this.#batch.length === 0) return;
    const { cache } = this.context;
    const { turn, step } = this.input;
    const running = this.#batch;
    this.#batch = [];
    const fresh = running.filter((call) => !this.session.state.openStep?.calls.get(call.id)?.started);
    const starts = fresh.map((call): EventDraft => ({
      type: 'tool/start',
      at: Date.now(),
      turn,
      step,
      callId: call.id,
      name: call.name,
    }));
    // Quick read-only calls' starts are staged: they reach the store with the results, one commit fewer. An
    // attempt that dies first leaves no start, so a retry runs them again and a repair says "not run", both
    // true to the world (they changed nothing). Any other call's start is logged before it runs.
    const readOnly = running.every((call) => {
      const tool = toolFor(this.context.runtime, this.session, call.name);
      return tool?.quick === true && tool.readOnly === true;
    });
    if (readOnly) this.#session = cache.stage(this.#session, starts);
    else await this.#append(starts);
    // Armed only in crash tests: kill the worker while these tools run (never after they returned).
    const killer = failpointArmed('tool-running') ? setTimeout(() => failpoint('tool-running'), 200) : undefined;
    const outputs = await mapWithLimit(running, TOOL_POOL, (call) => this.#run(call));
    clearTimeout(killer);
    if (this.signal.aborted) {
      // Staged starts are logged (the calls did start), so the turn's repair answers them as interrupted.
      await this.#append([]);
      throw new CancelledFailure('interrupted during a tool call');
    }
    // Results are logged in model order, whatever order the calls finished in.
    const results = running.map((call, i) =>
      this.#result(call, outputs[i]?.status ?? 'error', outputs[i]?.output ?? ''),
    );
    if (last) {
      this.#session = cache.stage(this.#session, results);
      return;
    }
    await this.#append(results);
    failpoint('tool-after-append');
  }

  /** One call, with a progress reporter for its lifetime when an observer listens. */
  async #run(call: ToolCall): Promise<ToolOutput> {
    const reporter = this.#progressReporter(call);
    try {
      return await runTool(toolFor(this.context.runtime, this.session, call.name), call, {
        sessionId: this.input.sessionId,
        callId: call.id,
        workspace: this.workspace,
        signal: this.signal,
        ...(reporter !== null ? { progress: reporter.progress } : {}),
      });
    } finally {
      reporter?.close();
    }
  }

  #progressReporter(call: ToolCall): ToolProgressReporter | null {
    const { runtime } = this.context;
    if (runtime.onToolProgress === undefined) return null;
    const { sessionId, turn, step } = this.input;
    // The step as it stands when the call starts; observers need where, not the results to come.
    const context: StepContext = { sessionId, turn, step, events: this.session.events };
    return toolProgressReporter((update) =>
      runtime.onToolProgress?.(
        {
          ...update,
          callId: call.id,
          name: call.name,
          attempt: this.attempt,
          ...(this.attemptScheduledAt !== undefined ? { attemptScheduledAt: this.attemptScheduledAt } : {}),
          at: Date.now(),
        },
        context,
      ),
    );
  }

  #result(call: ToolCall, status: 'ok' | 'error' | 'interrupted', output: string): EventDraft {
    const { turn, step } = this.input;
    return { type: 'tool/result', at: Date.now(), turn, step, callId: call.id, name: call.name, status, output };
  }

  async #append(drafts: readonly EventDraft[]): Promise<void> {
    this.#session = await this.context.cache.append(this.#session, drafts);
  }
}

/** Why the call asked for approval, as its `approval/request` logged it. */
function approvalReason(session: Session, turn: number, step: number, callId: string): string {
  for (let i = session.events.length - 1; i >= 0; i--) {
    const e = session.events[i];
    if (e?.type === 'approval/request' && e.turn === turn && e.step === step && e.callId === callId) return e.reason;
  }
  return '';
}
