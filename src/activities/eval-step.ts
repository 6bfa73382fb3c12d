// evalStep: one recorded step sent again with a declared change. The candidate goes to a log of its own (a
// fork-like child of the source ending at the step's request, marked `eval`), through the same outbound gate,
// limiter and pricing as a session's step; a retry finds a logged answer and sends nothing again.
import { Context } from '@temporalio/activity';
import {
  buildRequest,
  buildSessionRequest,
  DhError,
  ErrorCode,
  foldRequestHeader,
  Session,
  type EventDraft,
  type EventOf,
} from '../core/index.js';
import { deriveSentRequest } from '../audit/derive-sent-requests.js';
import { withContextWindow } from './context-window.js';
import type { SessionRuntime } from './session-runtime.js';
import { applyEvalChange, invariantDigest } from '../eval/eval-change.js';
import { runJudges, structuralJudge } from '../eval/eval-judge.js';
import {
  answerFacts,
  candidateSentSeq,
  evalLogEvents,
  recordedStepAt,
  turnFacts,
  type RecordedStep,
} from '../eval/eval-log.js';
import { diffStep } from '../eval/step-diff.js';
import { forkAnchor } from '../operations/session-transfer.js';
import { toWireBody } from '../providers/wire-body.js';
import type { EvalStepInput, EvalStepOutcome } from '../shared/eval-contracts.js';
import type { ActivityContext } from './activity-context.js';
import { answerOpenStep } from './eval-send.js';
import { worstCaseOf } from './cost-cap.js';
import { continueTurn, DEFAULT_EVAL_MAX_STEPS } from './eval-continue.js';

export const EVAL_PROVIDER_MISMATCH = 'EVAL_PROVIDER_MISMATCH';
/** What an eval log's unrun tool calls are answered with: the evaluation stops after the step it sends. */
export const EVAL_TOOL_NOT_RUN = 'Not run: an evaluation (dh eval) sends one recorded step again and runs no tools.';

export async function evalStep(context: ActivityContext, input: EvalStepInput): Promise<EvalStepOutcome> {
  const { target } = input;
  return context.guarded(target.evalSessionId, async () => {
    const { runtime } = context;
    const skipped = (reason: string, extra: Partial<EvalStepOutcome> = {}): EvalStepOutcome => ({
      target,
      status: 'skipped',
      reason,
      ...extra,
    });
    const source = new Session(target.sourceSessionId, await runtime.store.read(target.sourceSessionId));
    let recorded: RecordedStep;
    try {
      recorded = recordedStepAt(source.events, target.sentSeq);
    } catch (error) {
      return skipped(error instanceof Error ? error.message : String(error));
    }
    if (recorded.answer === null) return skipped('the source step has no logged answer (it failed or was cut)');
    const derived = await deriveSentRequest(source.sessionId, source.events, recorded.sent, {
      profile: runtime.profile,
    });
    if (!derived.digestOk || derived.request === null) {
      return skipped(
        `the recorded request does not re-derive from the log (${derived.error ?? 'digest differs'}): see dh audit ${source.sessionId}`,
      );
    }
    const header = foldRequestHeader(source.events.slice(0, target.sentSeq));
    if (header === undefined) return skipped('the source log has no request header before the step');
    const changed = applyEvalChange(header, input.change);
    // A candidate of another model records that model's window on this worker, not the source model's.
    const candidateHeader =
      changed.config.model !== header.config.model ? withContextWindow(runtime, changed, undefined) : changed;
    if (candidateHeader.config.provider !== runtime.profile.name) {
      throw new DhError(
        EVAL_PROVIDER_MISMATCH,
        `the candidate requests go to provider "${candidateHeader.config.provider}", but this worker serves ` +
          `"${runtime.profile.name}": run the eval on the task queue of a worker for "${candidateHeader.config.provider}" (dh eval --task-queue)`,
        { provider: candidateHeader.config.provider, served: runtime.profile.name },
      );
    }

    const seeded = seededEvalLog(input, source, candidateHeader);
    const stored = await storedEvalLog(context, input.target.evalSessionId);
    const continued = input.mode === 'continue';
    // Done when its turn has ended: one answer (single step), or the whole rest of the turn (continue).
    let evalLog: Session | null = stored;
    let fromLog = true;
    if (evalLog === null || evalLog.state.openTurn !== null) {
      fromLog = false;
      // A request already recorded as sent passed the budget before (a retry after a crash): it goes again.
      if ((evalLog === null || candidateSentSeq(evalLog.events) === null) && input.allowanceUsd !== undefined) {
        const refusal = await budgetRefusal(runtime, seeded, input.allowanceUsd);
        if (refusal !== null)
          return skipped(refusal.reason, refusal.needsUsd !== undefined ? { needsUsd: refusal.needsUsd } : {});
      }
      const opened = evalLog ?? (await createEvalLog(context, input, source, seeded));
      evalLog = continued
        ? await continueTurn(context, runtime, opened, {
            allowTools: input.allowTools ?? [],
            maxSteps: input.maxSteps ?? DEFAULT_EVAL_MAX_STEPS,
            ...(input.allowanceUsd !== undefined ? { allowanceUsd: input.allowanceUsd } : {}),
          })
        : await closeSingleStep(context, await answeredOnce(context, runtime, opened));
    }
    if (evalLog === null) throw new Error('unreachable: the eval log was written above');
    const candidateSent = candidateSentSeq(evalLog.events);
    const evalStepRecord = candidateSent !== null ? recordedStepAt(evalLog.events, candidateSent) : null;
    if (candidateSent === null || evalStepRecord?.answer == null) {
      // Only a continued turn refused by its budget before its first call ends without an answer.
      return skipped(`the eval log "${target.evalSessionId}" ended without an answer (${lastTurnEnd(evalLog)})`);
    }

    const sourceFacts = continued ? turnFacts(source.events, target.sentSeq) : answerFacts(recorded);
    const candidateFacts = continued ? turnFacts(evalLog.events, candidateSent) : answerFacts(evalStepRecord);
    if (sourceFacts === null || candidateFacts === null) throw new Error('unreachable: both steps have answers');
    const diff = diffStep(sourceFacts, candidateFacts);
    const candidateRequest = buildRequest(target.evalSessionId, evalLog.events.slice(0, candidateSent));
    const judges = await withHeartbeat(runtime.heartbeatMs, () =>
      runJudges([structuralJudge, ...(runtime.judges ?? [])], {
        sessionId: source.sessionId,
        turn: target.turn,
        step: target.step,
        request: derived.request as NonNullable<typeof derived.request>,
        source: sourceFacts,
        candidate: candidateFacts,
        diff,
      }),
    );
    return {
      target,
      status: 'answered',
      fromLog,
      sourceDigest: recorded.sent.digest,
      candidateDigest: evalStepRecord.sent.digest,
      sourceInvariant: invariantDigest(derived.request, input.change),
      candidateInvariant: invariantDigest(candidateRequest, input.change),
      costUsd: candidateFacts.costUsd,
      judges,
      ...(continued ? { steps: { source: stepsOf(sourceFacts), candidate: stepsOf(candidateFacts) } } : {}),
    };
  });
}

/** The eval log up to its request, in memory: the seed and the changed header for the open step. */
function seededEvalLog(input: EvalStepInput, source: Session, header: ReturnType<typeof applyEvalChange>): Session {
  const { target } = input;
  return evalLogEvents(source, {
    evalSessionId: target.evalSessionId,
    runId: input.runId,
    sentSeq: target.sentSeq,
    at: input.at,
    header,
  });
}

/** The eval log as stored, or null when nothing of it is written yet. */
async function storedEvalLog(context: ActivityContext, evalSessionId: string): Promise<Session | null> {
  const head = await context.runtime.store.head(evalSessionId).catch((error: unknown) => {
    if (error instanceof DhError && error.code === ErrorCode.SessionNotFound) return -1;
    throw error;
  });
  return head > 0 ? await context.cache.load(evalSessionId) : null;
}

/** Writes the seeded log; another attempt may have got there first (or died between create and append). */
async function createEvalLog(
  context: ActivityContext,
  input: EvalStepInput,
  source: Session,
  seeded: Session,
): Promise<Session> {
  const { target } = input;
  const { store } = context.runtime;
  // The chain starts from the source's chain where the seed ends, as a fork's does.
  const seedLength = seeded.state.parent?.seedLength ?? target.sentSeq;
  const chainAnchor = await forkAnchor(store, source.sessionId, seedLength);
  await store.create(target.evalSessionId, {
    createdAt: input.at,
    parentSessionId: source.sessionId,
    ...(chainAnchor !== undefined ? { chainAnchor } : {}),
  });
  // The same slots as any other attempt's: the store hands back what is there instead of writing twice.
  await store.append(target.evalSessionId, 0, seeded.events);
  return await context.cache.load(target.evalSessionId);
}

/** Why the candidate must not be sent within `allowanceUsd` (its worst case, priced by the worker's table), or null. */
async function budgetRefusal(
  runtime: SessionRuntime,
  seeded: Session,
  allowanceUsd: number,
): Promise<{ reason: string; needsUsd?: number } | null> {
  const request = buildSessionRequest(seeded);
  const { provider, model } = request.config;
  const bound = worstCaseOf(
    runtime,
    seeded,
    request,
    (await toWireBody(request, runtime.profile, runtime.readAttachment)).bytes,
  );
  if ('problem' in bound) {
    return {
      reason:
        bound.problem === 'no-price'
          ? `a budget is set but "${provider}/${model}" has no price on the worker that serves this eval ` +
            `(${servingWorker()}): add it to that worker's DH_PRICING and restart it`
          : 'a budget is set but the call has no output limit: set maxTokens in the change',
    };
  }
  const worst = bound.worstUsd;
  if (worst <= allowanceUsd) return null;
  return {
    reason: `over budget: this call may cost up to $${worst.toFixed(6)}, $${allowanceUsd.toFixed(6)} was left for it`,
    needsUsd: worst,
  };
}

/**
 * The worker this activity runs on, as an operator finds it: its prices are its own environment's DH_PRICING,
 * not that of the shell that ran `dh eval`.
 */
function servingWorker(): string {
  try {
    return `the worker polling task queue "${Context.current().info.taskQueue}"`;
  } catch {
    return 'the worker serving its task queue';
  }
}

/** The evaluated step's answer: sent now unless an earlier attempt logged it. */
async function answeredOnce(context: ActivityContext, runtime: SessionRuntime, session: Session): Promise<Session> {
  return session.state.openStep?.assistantSeq != null ? session : await answerOpenStep(context, runtime, session);
}

/** Single step: the answer's tool calls are answered `skipped` (none runs) and the turn ends there. */
async function closeSingleStep(context: ActivityContext, session: Session): Promise<Session> {
  const open = session.state.openStep;
  if (open === null || open.assistantSeq === null) return session;
  const answer = session.events[open.assistantSeq] as EventOf<'assistant/message'>;
  const { turn, step } = open;
  const at = Date.now();
  return await context.cache.append(session, [
    ...answer.toolCalls.map((call): EventDraft => ({
      type: 'tool/result',
      at,
      turn,
      step,
      callId: call.id,
      name: call.name,
      output: EVAL_TOOL_NOT_RUN,
      status: 'skipped',
    })),
    { type: 'step/end', at, turn, step },
    answer.toolCalls.length === 0
      ? { type: 'turn/end', at, turn, reason: 'completed' }
      : {
          type: 'turn/end',
          at,
          turn,
          reason: 'interrupted',
          error: { code: 'EVAL_SINGLE_STEP', message: 'an evaluation sends one step and runs none of its tool calls' },
        },
  ]);
}

/** The steps a turn's facts cover (turnFacts counts them; one answer is one step). */
function stepsOf(facts: object): number {
  return 'steps' in facts && typeof facts.steps === 'number' ? facts.steps : 1;
}

/** How the eval log's turn ended, in words (for a skipped outcome). */
function lastTurnEnd(session: Session): string {
  const end = session.state.lastTurnEnd;
  return end === null
    ? 'its turn is still open'
    : `turn ${end.turn} ended ${end.reason}${end.error ? `: ${end.error.message}` : ''}`;
}

/** Heartbeats while `run` runs (judges may call a model): a long judge is not a dead worker. */
async function withHeartbeat<T>(everyMs: number, run: () => Promise<T>): Promise<T> {
  const activity = Context.current();
  const timer = setInterval(() => activity.heartbeat(), everyMs);
  try {
    return await run();
  } finally {
    clearInterval(timer);
  }
}
