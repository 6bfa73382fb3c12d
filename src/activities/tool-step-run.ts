// One attempt at a tool step's calls, in model order: each passes the approval gate first (allow / deny /
// ask), consecutive concurrency-safe calls run in parallel, and results are logged in model order. A call
// with a result is skipped; one started by a crashed attempt runs again only if its tool is idempotent.
// A running call's progress goes to the observers (the live channel), throttled, never to the log.
import { CancelledFailure } from '@temporalio/activity';
import { TOOL_OUTCOME_UNKNOWN, type EventDraft, type Session, type ToolCall } from '../core/index.js';
import type { StepContext, ToolOutput } from '../plugins/contracts.js';
import type { ApprovalDecisionInput, PendingApproval, ToolStepInput } from '../shared/activity-contracts.js';
import type { ActivityContext } from './activity-context.js';
import { failpoint, failpointArmed } from './failpoints.js';
import { mapWithLimit } from './map-with-limit.js';
import { runTool } from './run-tool.js';
import { toolProgressReporter, type ToolProgressReporter } from './tool-progress.js';

/** Parallel tool runs per step. */
const TOOL_POOL = 4;

export class ToolStepRun {
  #session: Session;
  #batch: ToolCall[] = [];
  readonly #decisions: ReadonlyMap<string, ApprovalDecisionInput>;

  constructor(
    readonly context: ActivityContext,
    session: Session,
    readonly input: ToolStepInput,
    readonly workspace: string,
    readonly signal: AbortSignal,
    /** This activity's attempt, which tags the calls' progress updates. */
    readonly attempt = 1,
  ) {
    this.#session = session;
    this.#decisions = new Map((input.decisions ?? []).map((d) => [d.callId, d]));
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
   * Runs (or answers) every call without a result. Returns the call that waits for a decision (the
   * workflow waits durably and calls again with it), or null once every call has its result (the last
   * batch's results staged: they reach the store with the step's end).
   */
  async runCalls(calls: readonly ToolCall[]): Promise<PendingApproval | null> {
    const { runtime } = this.context;
    const { turn, step } = this.input;
    for (const [index, call] of calls.entries()) {
      const state = this.session.state.openStep?.calls.get(call.id);
      if (!state || state.answered) continue;
      const tool = runtime.tools.get(call.name);
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
        const gate = runtime.toolBefore
          ? await runtime.toolBefore(
              { callId: call.id, name: call.name, arguments: call.arguments },
              this.stepContext(),
            )
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
          return { callId: call.id, name: call.name, reason: approvalReason(this.session, turn, step, call.id) };
        }
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
      if (!tool?.concurrencySafe) await this.#runBatch();
      this.#batch.push(call);
      if (!tool?.concurrencySafe) await this.#runBatch(index === calls.length - 1);
    }
    await this.#runBatch(true);
    return null;
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
    await this.#append(
      fresh.map((call) => ({ type: 'tool/start', at: Date.now(), turn, step, callId: call.id, name: call.name })),
    );
    // Armed only in crash tests: kill the worker while these tools run (never after they returned).
    const killer = failpointArmed('tool-running') ? setTimeout(() => failpoint('tool-running'), 200) : undefined;
    const outputs = await mapWithLimit(running, TOOL_POOL, (call) => this.#run(call));
    clearTimeout(killer);
    if (this.signal.aborted) throw new CancelledFailure('interrupted during a tool call');
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
      return await runTool(this.context.runtime.tools.get(call.name), call, {
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
        { ...update, callId: call.id, name: call.name, attempt: this.attempt, at: Date.now() },
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
