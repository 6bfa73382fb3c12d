// The session activities: every read and write of a session's log and every call out of the process.
// Each one is idempotent — it looks at what the log already holds for its slot and does only the rest —
// and returns receipts (seq, type, digest, chain head) of everything appended since the workflow's known head.
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Context, CancelledFailure } from '@temporalio/activity';
import {
  addUsage,
  buildCompactionRequest,
  buildSessionRequest,
  deriveEventMessages,
  compactionRange,
  ErrorCode,
  estimateTokens,
  firstDifference,
  InvariantError,
  pruneReplacements,
  SUMMARY_PREFIX,
  canonicalJson,
  DhError,
  emptyUsage,
  repairDrafts,
  SESSION_FORMAT_VERSION,
  TOOL_OUTCOME_UNKNOWN,
  TransientError,
  type EventDraft,
  type ToolCall,
  type RequestHeader,
  type Session,
} from '../core/index.js';
import { toWireBody } from '../providers/wire-body.js';
import type {
  AppendOutcome,
  CloseStepInput,
  CloseTurnInput,
  CompactInput,
  CompactOutcome,
  IngressMessage,
  InboxInput,
  ModelStepInput,
  ModelStepOutcome,
  OpenSessionInput,
  OpenSessionOutcome,
  SessionTotals,
  ToolStepInput,
  ToolStepOutcome,
} from '../shared/activity-contracts.js';
import { callModelObserved } from './call-model-observed.js';
import { failpoint, failpointArmed } from './failpoints.js';
import { DEFAULT_MAX_SESSIONS, SessionCache } from './session-cache.js';
import type { ClaimedMessage, ToolContext, ToolDefinition } from '../plugins/contracts.js';
import type { SessionRuntime } from './session-runtime.js';
import { stepRecord } from './step-events.js';
import { toApplicationFailure } from './to-application-failure.js';
import { OutboundGate } from './outbound-gate.js';

/** How many recent message ids a (re)opened session hands the workflow for deduplication. */
const RECENT_IDS = 2_000;

export function createSessionActivities(runtime: SessionRuntime) {
  const cache = new SessionCache(runtime.store, runtime.sessionCache);
  // The gate reads the store itself and keeps its own memory of verified rows, never the cache's. It
  // remembers as many sessions as the cache holds: fewer would make it verify cold, in full, whenever more
  // sessions than that take turns stepping on this worker.
  const gate = new OutboundGate(runtime.store, runtime.sessionCache?.maxSessions ?? DEFAULT_MAX_SESSIONS);

  /**
   * The activity edge for one session. A read that finds the stored log damaged (INVALID_EVENT, e.g. the
   * gate's fresh read) also drops the worker's cached copy: no later activity of the session may append
   * past the damage on the strength of a copy read before it, so each one refuses, as a fresh worker would.
   */
  const guarded = <T>(sessionId: string, run: () => Promise<T>): Promise<T> =>
    edge(run, (error) => {
      if (error instanceof DhError && error.code === ErrorCode.InvalidEvent) cache.forget(sessionId);
    });

  const outcome = async (session: Session, knownHead: number): Promise<AppendOutcome> => {
    const current = await cache.load(session.sessionId);
    return { receipts: cache.receiptsSince(current, knownHead), head: current.head };
  };

  return {
    /** Creates the session's log if needed, or repairs what a crashed run left open (appending only). */
    async openSession(input: OpenSessionInput): Promise<OpenSessionOutcome> {
      return guarded(input.sessionId, async () => {
        await storeCall(() => runtime.store.create(input.sessionId, { createdAt: input.at }));
        let session = await cache.load(input.sessionId);
        const before = session.head;
        if (session.head === 0) {
          session = await cache.append(session, [
            { type: 'session/start', at: input.at, sessionId: input.sessionId, formatVersion: SESSION_FORMAT_VERSION },
          ]);
        } else {
          session = await cache.append(session, repairDrafts(session, input.at));
        }
        const queue = [...session.state.queue.values()].map((m) => ({
          messageId: m.messageId,
          target: m.target,
          wakeup: m.wakeup,
          downgraded: m.downgraded,
        }));
        return {
          receipts: cache.receiptsSince(session, before),
          head: session.head,
          ...(runtime.hostTaskQueue !== undefined ? { hostTaskQueue: runtime.hostTaskQueue } : {}),
          repaired: before === 0 ? 0 : session.head - before,
          lastTurn: session.state.lastTurn,
          queue,
          messageIds: [...session.state.seenMessageIds].slice(-RECENT_IDS),
          totals: sessionTotals(session),
        };
      });
    },

    /** Logs messages that arrived while the session was idle (non-waking ones, e.g. injects). */
    async appendInbox(input: InboxInput): Promise<AppendOutcome> {
      return guarded(input.sessionId, async () => {
        const session = await cache.load(input.sessionId);
        return outcome(await cache.append(session, ingressDrafts(session, input.ingress)), input.knownHead);
      });
    },

    /**
     * One model step: log the boundary (arrived messages, turn start, claim, pre-step decision, step
     * start, claimed messages as user messages, header), then build the request, pass the gate,
     * record the wire digest, call the provider and log its answer. A retry resumes at the first
     * missing piece; an answer already in the log is returned without calling the provider.
     */
    async modelStep(input: ModelStepInput): Promise<ModelStepOutcome> {
      return guarded(input.sessionId, async () => {
        const { sessionId, turn, step } = input;
        let session = await cache.load(sessionId);

        const boundary: EventDraft[] = ingressDrafts(session, input.ingress);
        if (input.startTurn && session.state.lastTurn < turn) boundary.push({ type: 'turn/start', at: input.at, turn });
        session = await cache.append(session, boundary);

        if (session.state.lastTurnEnd?.turn === turn) return blocked(await outcome(session, input.knownHead));
        let record = stepRecord(session, turn, step);
        if (!record.started) {
          const claimable = input.claim.filter((id) => session.state.queue.has(id));
          const batch: ClaimedMessage[] = claimable.map((id) => {
            const m = session.state.queue.get(id);
            if (!m) throw new DhError('CLAIM_LOST', `message "${id}" left the queue while being claimed`);
            return {
              messageId: m.messageId,
              origin: m.origin,
              ...(m.source !== undefined ? { source: m.source } : {}),
              content: m.content,
            };
          });
          if (input.compactAt !== undefined && overPressure(runtime, session, batch, input.compactAt)) {
            // Nothing of this step is logged yet: the workflow compacts and asks again.
            return {
              ...(await outcome(session, input.knownHead)),
              outcome: 'compact',
              toolCallIds: [],
              stepEnded: false,
              usage: null,
              fromLog: false,
            };
          }
          const decision = runtime.preStep
            ? await runtime.preStep(batch, { sessionId, turn, step, events: session.events })
            : { decision: 'enter' as const };
          const drafts: EventDraft[] =
            batch.length > 0
              ? [{ type: 'inbox/claim', at: input.at, turn, step, messageIds: batch.map((m) => m.messageId) }]
              : [];
          if (decision.decision === 'reject') {
            // The batch is not returned to the queue: it was claimed, and the turn ends blocked.
            drafts.push({
              type: 'turn/end',
              at: input.at,
              turn,
              reason: 'blocked',
              error: { code: 'PRE_STEP_REJECTED', message: decision.reason },
            });
            session = await cache.append(session, drafts);
            return blocked(await outcome(session, input.knownHead));
          }
          drafts.push({ type: 'step/start', at: input.at, turn, step });
          for (const m of decision.messages ?? batch) {
            drafts.push({
              type: 'user/message',
              at: input.at,
              turn,
              step,
              messageId: m.messageId,
              origin: m.origin,
              ...(m.source !== undefined ? { source: m.source } : {}),
              content: m.content,
            });
          }
          session = await cache.append(session, drafts);
          record = stepRecord(session, turn, step);
        }

        if (!record.assistant && !record.header) {
          const header = await nextHeader(runtime, session, input.instance.headerRecorded, turn, step);
          if (header) {
            session = await cache.append(session, [{ type: 'request/header', at: input.at, turn, step, ...header }]);
          }
        }

        if (record.assistant) {
          // The answer is already logged (an earlier attempt got it before the worker died): no new call.
          const answer = record.assistant;
          if (answer.toolCalls.length === 0 && !record.ended) {
            session = await cache.append(session, [{ type: 'step/end', at: input.at, turn, step }]);
          }
          return {
            ...(await outcome(session, input.knownHead)),
            outcome: 'responded',
            toolCallIds: answer.toolCalls.map((c) => c.id),
            stepEnded: answer.toolCalls.length === 0,
            usage: answer.usage ?? null,
            fromLog: true,
          };
        }

        // Outbound observers see the frozen request; whatever they hand on must pass the gate: the request
        // must be exactly what a fresh read of the store derives, or nothing is sent.
        const stepContext = { sessionId, turn, step, events: session.events };
        const built = buildSessionRequest(session);
        const observed = runtime.onRequest ? runtime.onRequest(built, stepContext) : built;
        const request = await gate.verify(observed);
        const wire = await toWireBody(request, runtime.profile);
        if (!record.sent) {
          session = await cache.append(session, [
            { type: 'request/sent', at: input.at, turn, step, digest: wire.digest, bytes: wire.bytes },
          ]);
        } else if (record.sent.digest !== wire.digest) {
          throw new DhError(
            'WIRE_DIGEST_DRIFT',
            `step ${turn}.${step} was recorded with wire digest ${record.sent.digest}, now derives ${wire.digest}`,
          );
        }

        const result = await callModelObserved(runtime, {
          request,
          verifiedBody: wire.body,
          purpose: 'step',
          context: stepContext,
          onDelta: (delta) => {
            runtime.onStreamDelta?.(delta, stepContext);
            failpoint('model-streaming');
          },
        });
        const message = result.message;
        const drafts: EventDraft[] = [
          {
            type: 'assistant/message',
            at: Date.now(),
            turn,
            step,
            content: message.content,
            ...(message.reasoning !== undefined ? { reasoning: message.reasoning } : {}),
            toolCalls: message.toolCalls,
            finishReason: message.finishReason,
            ...(result.usage ? { usage: result.usage } : {}),
            ...(message.interrupted ? { interrupted: true as const } : {}),
          },
        ];
        const noTools = message.toolCalls.length === 0;
        if (noTools && !message.interrupted) drafts.push({ type: 'step/end', at: Date.now(), turn, step });
        session = await cache.append(session, drafts);
        failpoint('model-after-append');
        if (message.interrupted) throw new CancelledFailure('interrupted: partial response logged');
        return {
          ...(await outcome(session, input.knownHead)),
          outcome: 'responded',
          toolCallIds: message.toolCalls.map((c) => c.id),
          stepEnded: noTools,
          usage: result.usage ?? null,
          fromLog: false,
        };
      });
    },

    /**
     * Runs the step's tool calls and logs each result in model order, then ends the step. Each call
     * passes the approval gate first (allow / deny / ask — an ask returns to the workflow, which waits
     * durably for a decision and calls again with it). Consecutive concurrency-safe calls run in
     * parallel. A call with a result is skipped; a call started by a crashed attempt runs again only
     * if its tool is idempotent, otherwise it is answered "outcome unknown".
     */
    async toolStep(input: ToolStepInput): Promise<ToolStepOutcome> {
      return guarded(input.sessionId, async () => {
        const { sessionId, turn, step } = input;
        let session = await cache.load(sessionId);
        session = await cache.append(session, ingressDrafts(session, input.ingress));
        const open = session.state.openStep;
        if (!open || open.turn !== turn || open.step !== step || open.assistantSeq === null) {
          // Already ended by an earlier attempt.
          return { ...(await outcome(session, input.knownHead)), pendingApproval: null, enqueued: [] };
        }
        const assistant = session.events[open.assistantSeq];
        const calls = assistant?.type === 'assistant/message' ? assistant.toolCalls : [];
        const decisions = new Map((input.decisions ?? []).map((d) => [d.callId, d]));
        const context = Context.current();
        const workspace = workspaceOf(runtime, sessionId);
        const stepContext = () => ({ sessionId, turn, step, events: session.events });
        const result = (call: ToolCall, status: 'ok' | 'error' | 'interrupted', output: string): EventDraft => ({
          type: 'tool/result',
          at: Date.now(),
          turn,
          step,
          callId: call.id,
          name: call.name,
          status,
          output,
        });
        const heartbeat = setInterval(() => context.heartbeat(), runtime.heartbeatMs);
        try {
          let batch: ToolCall[] = [];
          /**
           * `last`: the step's final batch (nothing runs after it). Its results are staged, not appended:
           * they reach the store in one commit with the step's end (below), so a steady tool step costs
           * two commits, not three.
           */
          const runBatch = async (last = false): Promise<void> => {
            if (batch.length === 0) return;
            const running = batch;
            batch = [];
            const fresh = running.filter((call) => !session.state.openStep?.calls.get(call.id)?.started);
            session = await cache.append(
              session,
              fresh.map((call) => ({
                type: 'tool/start',
                at: Date.now(),
                turn,
                step,
                callId: call.id,
                name: call.name,
              })),
            );
            // Armed only in crash tests: kill the worker while these tools run (never after they returned).
            const killer = failpointArmed('tool-running')
              ? setTimeout(() => failpoint('tool-running'), 200)
              : undefined;
            const outputs = await mapWithLimit(running, TOOL_POOL, (call) =>
              runTool(runtime.tools.get(call.name), call, {
                sessionId,
                callId: call.id,
                workspace,
                signal: context.cancellationSignal,
              }),
            );
            clearTimeout(killer);
            if (context.cancellationSignal.aborted) throw new CancelledFailure('interrupted during a tool call');
            // Results are logged in model order, whatever order the calls finished in.
            const results = running.map((call, i) =>
              result(call, outputs[i]?.status ?? 'error', outputs[i]?.output ?? ''),
            );
            if (last) {
              session = cache.stage(session, results);
              return;
            }
            session = await cache.append(session, results);
            failpoint('tool-after-append');
          };

          for (const [index, call] of calls.entries()) {
            const state = session.state.openStep?.calls.get(call.id);
            if (!state || state.answered) continue;
            const tool = runtime.tools.get(call.name);
            if (state.started) {
              if (tool?.idempotent) {
                batch.push(call);
                await runBatch();
              } else {
                session = await cache.append(session, [result(call, 'interrupted', TOOL_OUTCOME_UNKNOWN)]);
              }
              continue;
            }
            let approval = state.approval;
            if (approval === 'none' && tool) {
              const gate = runtime.toolBefore
                ? await runtime.toolBefore(
                    { callId: call.id, name: call.name, arguments: call.arguments },
                    stepContext(),
                  )
                : { decision: 'allow' as const };
              if (gate.decision === 'deny') {
                await runBatch();
                session = await cache.append(session, [result(call, 'error', `The call was denied: ${gate.reason}`)]);
                continue;
              }
              if (gate.decision === 'ask') {
                await runBatch();
                session = await cache.append(session, [
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
              const decision = decisions.get(call.id);
              if (!decision) {
                await runBatch();
                const reason = findApprovalReason(session, turn, step, call.id);
                return {
                  ...(await outcome(session, input.knownHead)),
                  pendingApproval: { callId: call.id, name: call.name, reason },
                  enqueued: [],
                };
              }
              session = await cache.append(session, [
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
              await runBatch();
              const why =
                approval === 'deny'
                  ? 'The call was denied by the approver.'
                  : 'No approval arrived in time; the call was not run.';
              session = await cache.append(session, [result(call, 'error', why)]);
              continue;
            }
            if (!tool?.concurrencySafe) await runBatch();
            batch.push(call);
            if (!tool?.concurrencySafe) await runBatch(index === calls.length - 1);
          }
          await runBatch(true);
        } finally {
          clearInterval(heartbeat);
        }

        // Plugins may leave notices for the next step; they are logged as injected context. They see the
        // staged results; a plugin that throws must not cost the results of tools that already ran.
        let notices: readonly { source: string; content: string }[] = [];
        try {
          if (runtime.afterTools) notices = await runtime.afterTools(stepContext());
        } catch (error) {
          session = await cache.append(session, []);
          throw error;
        }
        const enqueue: EventDraft[] = notices.map((notice, i) => ({
          type: 'inbox/enqueue',
          at: Date.now(),
          messageId: `notice-${turn}.${step}-${i + 1}`,
          target: 'next-step',
          wakeup: false,
          origin: 'inject',
          source: notice.source,
          content: notice.content,
        }));
        const fresh = enqueue.filter(
          (e) => e.type === 'inbox/enqueue' && !session.state.seenMessageIds.has(e.messageId),
        );
        session = await cache.append(session, [...fresh, { type: 'step/end', at: Date.now(), turn, step }]);
        failpoint('tool-after-append');
        return {
          ...(await outcome(session, input.knownHead)),
          pendingApproval: null,
          enqueued: notices.map((_, i) => ({
            messageId: `notice-${turn}.${step}-${i + 1}`,
            target: 'next-step' as const,
            wakeup: false,
            downgraded: false,
          })),
        };
      });
    },

    /**
     * Ends a step that cannot go on (a context overflow): answers its open calls and logs `step/end`
     * with the error, so the turn can compact and carry on with a new step.
     */
    async closeStep(input: CloseStepInput): Promise<AppendOutcome> {
      return guarded(input.sessionId, async () => {
        let session = await cache.load(input.sessionId);
        const drafts = ingressDrafts(session, input.ingress);
        const open = session.state.openStep;
        if (open && open.turn === input.turn && open.step === input.step) {
          const closing = repairDrafts(session, input.at).filter((d) => d.type === 'tool/result');
          drafts.push(...closing, {
            type: 'step/end',
            at: input.at,
            turn: input.turn,
            step: input.step,
            error: input.error,
          });
        }
        session = await cache.append(session, drafts);
        return outcome(session, input.knownHead);
      });
    },

    /**
     * One compaction, logged as compact/start … compact/end. A summary replaces the surface before
     * the most recent turns, produced by a request that is the next step's request plus an
     * instruction (a cache hit on the shared prefix); `prune` replaces large old tool outputs by
     * stubs, without a model. Idempotent per compaction id: a retry resumes or returns.
     */
    async compact(input: CompactInput): Promise<CompactOutcome> {
      return guarded(input.sessionId, async () => {
        const { sessionId, compactionId } = input;
        let session = await cache.load(sessionId);
        session = await cache.append(session, ingressDrafts(session, input.ingress));
        const done = session.events.find((e) => e.type === 'compact/end' && e.compactionId === compactionId);
        const before = estimateTokens(session.deriveMessages());
        const finish = async (result: 'applied' | 'abandoned'): Promise<CompactOutcome> => ({
          ...(await outcome(session, input.knownHead)),
          outcome: result,
          tokensBefore: before,
          tokensAfter: estimateTokens(session.deriveMessages()),
        });
        if (done?.type === 'compact/end') return finish(done.outcome);
        const started = session.state.openCompaction === compactionId;
        // Nothing to do leaves no trace: compact/start is only written when there is something to apply.
        const stubs =
          input.trigger === 'prune'
            ? pruneReplacements(session.events, input.keepRecentTurns, input.pruneMinChars)
            : [];
        const range = input.trigger === 'prune' ? null : compactionRange(session.events, input.keepRecentTurns);
        if (!started && stubs.length === 0 && range === null) return finish('abandoned');
        if (!started) {
          session = await cache.append(session, [
            { type: 'compact/start', at: input.at, compactionId, trigger: input.trigger },
          ]);
        }
        const abandon = async (): Promise<CompactOutcome> => {
          session = await cache.append(session, [
            { type: 'compact/end', at: Date.now(), compactionId, outcome: 'abandoned' },
          ]);
          return finish('abandoned');
        };

        if (input.trigger === 'prune') {
          if (stubs.length === 0) return abandon();
          session = await cache.append(session, [
            ...stubs.map((stub, i): EventDraft => ({
              type: 'surface/replace',
              at: Date.now(),
              replaceId: `${compactionId}-${i + 1}`,
              range: { start: stub.position, end: stub.position },
              messages: [stub.message],
            })),
            { type: 'compact/end', at: Date.now(), compactionId, outcome: 'applied' },
          ]);
          return finish('applied');
        }

        if (!range) return abandon();
        const maxTokens = SUMMARY_MAX_TOKENS;
        const built = buildCompactionRequest(sessionId, session.events, maxTokens);
        // The same gate as a step: the summary request must be what a fresh read of the store derives.
        const fresh = buildCompactionRequest(sessionId, await runtime.store.read(sessionId), maxTokens);
        const where = firstDifference(built, fresh);
        if (where !== null) {
          throw new InvariantError(
            ErrorCode.RequestDiverges,
            sessionId,
            where,
            'the summary request differs from the stored log',
          );
        }
        const wire = await toWireBody(built, runtime.profile);
        const result = await callModelObserved(runtime, {
          request: built,
          verifiedBody: wire.body,
          purpose: 'compaction',
          // A compaction runs between steps: it belongs to the open turn (or the last one) at step 0.
          context: {
            sessionId,
            turn: session.state.openTurn ?? session.state.lastTurn,
            step: 0,
            events: session.events,
          },
          onDelta: () => failpoint('compaction-summarizing'),
        });
        if (result.message.interrupted) throw new CancelledFailure('interrupted during compaction');
        const summary = result.message.content?.trim() ?? '';
        if (summary === '') return abandon();
        const replacement = [{ role: 'user' as const, content: `${SUMMARY_PREFIX}${summary}` }];
        const after = session.deriveMessages();
        after.splice(range.start, range.end - range.start + 1, ...replacement);
        session = await cache.append(session, [
          {
            type: 'compact/summary',
            at: Date.now(),
            compactionId,
            provider: built.config.provider,
            model: built.config.model,
            maxTokens,
            range,
            tokensBefore: before,
            tokensAfter: estimateTokens(after),
            ...(result.usage ? { usage: result.usage } : {}),
            requestDigest: wire.digest,
            requestBytes: wire.bytes,
          },
          { type: 'surface/replace', at: Date.now(), replaceId: compactionId, range, messages: replacement },
          { type: 'compact/end', at: Date.now(), compactionId, outcome: 'applied' },
        ]);
        return finish('applied');
      });
    },

    /**
     * Ends a turn: answers its open tool calls (`interrupted` if started, `skipped` if not), ends the
     * open step and logs `turn/end` with the reason. Returns the queue as the log holds it.
     */
    async closeTurn(input: CloseTurnInput): Promise<OpenSessionOutcome> {
      return guarded(input.sessionId, async () => {
        let session = await cache.load(input.sessionId);
        if (input.refuse) {
          // Opened only to be refused: turn/start and the claim of the batch that woke it (as a pre-step
          // rejection logs it), so the batch leaves the queue with the turn's end. Each piece at most once.
          session = await cache.append(session, ingressDrafts(session, input.ingress));
          if (session.state.lastTurn < input.turn) {
            session = await cache.append(session, [{ type: 'turn/start', at: input.at, turn: input.turn }]);
          }
          const state = session.state;
          const claimable = input.refuse.claim.filter((id) => state.queue.has(id));
          if (claimable.length > 0 && state.openTurn === input.turn && state.lastStep === 0 && !state.pendingClaim) {
            session = await cache.append(session, [
              { type: 'inbox/claim', at: input.at, turn: input.turn, step: 1, messageIds: claimable },
            ]);
          }
        }
        const drafts = ingressDrafts(session, input.ingress);
        // An open compaction (a failed summary call) is abandoned first: no step may start while it is open.
        if (session.state.openCompaction !== null) {
          drafts.push({
            type: 'compact/end',
            at: input.at,
            compactionId: session.state.openCompaction,
            outcome: 'abandoned',
          });
        }
        if (session.state.openTurn === input.turn) {
          const closing = repairDrafts(session, input.at).filter(
            (d) => d.type !== 'turn/end' && d.type !== 'compact/end',
          );
          drafts.push(...closing, {
            type: 'turn/end',
            at: input.at,
            turn: input.turn,
            reason: input.reason,
            ...(input.error ? { error: input.error } : {}),
          });
        }
        session = await cache.append(session, drafts);
        return {
          ...(await outcome(session, input.knownHead)),
          repaired: 0,
          lastTurn: session.state.lastTurn,
          queue: [...session.state.queue.values()].map((m) => ({
            messageId: m.messageId,
            target: m.target,
            wakeup: m.wakeup,
            downgraded: m.downgraded,
          })),
          messageIds: [],
        };
      });
    },
  };
}

export type SessionActivities = ReturnType<typeof createSessionActivities>;

function blocked(base: AppendOutcome): ModelStepOutcome {
  return { ...base, outcome: 'blocked', toolCallIds: [], stepEnded: false, usage: null, fromLog: false };
}

/** Drafts logging arrived messages; ids already in the log (a retry, a client's duplicate) are skipped. */
/** The whole session's counts as the log holds them (what a run without a carry starts from). */
function sessionTotals(session: Session): SessionTotals {
  const usage = emptyUsage();
  let steps = 0;
  let compactions = 0;
  for (const e of session.events) {
    if (e.type === 'assistant/message') {
      steps++;
      addUsage(usage, e.usage);
    } else if (e.type === 'compact/end' && e.outcome === 'applied') {
      compactions++;
    }
  }
  const end = session.state.lastTurnEnd;
  return {
    steps,
    usage,
    compactions,
    lastTurnEnd: end ? { turn: end.turn, reason: end.reason, errorCode: end.error?.code ?? null } : null,
  };
}

function ingressDrafts(session: Session, ingress: readonly IngressMessage[]): EventDraft[] {
  const drafts: EventDraft[] = [];
  for (const m of ingress) {
    if (session.state.seenMessageIds.has(m.messageId)) continue;
    drafts.push({
      type: 'inbox/enqueue',
      at: m.at,
      messageId: m.messageId,
      target: m.target,
      wakeup: m.wakeup,
      origin: m.origin,
      ...(m.source !== undefined ? { source: m.source } : {}),
      content: m.content,
    });
    if (m.downgraded)
      drafts.push({ type: 'inbox/downgrade', at: m.at, messageId: m.messageId, requested: 'next-step' });
  }
  return drafts;
}

/**
 * The header this step must log, if any: the first step of a loop instance always logs one
 * (`initial`, or `resume` over a log that has one); later steps log one only when it changed.
 */
async function nextHeader(
  runtime: SessionRuntime,
  session: Session,
  instanceRecorded: boolean,
  turn: number,
  step: number,
): Promise<{ reason: 'initial' | 'resume' | 'change'; header: RequestHeader } | undefined> {
  const current = session.requestHeader();
  const header = await runtime.composeHeader({
    sessionId: session.sessionId,
    turn,
    step,
    events: session.events,
    firstOfInstance: !instanceRecorded,
    current,
  });
  if (!instanceRecorded) return { reason: current ? 'resume' : 'initial', header };
  if (current && canonicalJson(current) === canonicalJson(header)) return undefined;
  return { reason: current ? 'change' : 'initial', header };
}

async function runTool(
  tool: ToolDefinition | undefined,
  call: { id: string; name: string; arguments: string },
  context: ToolContext,
): Promise<{ output: string; status: 'ok' | 'error' }> {
  if (!tool) return { status: 'error', output: `Unknown tool "${call.name}".` };
  let args: unknown;
  try {
    args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (error) {
    return {
      status: 'error',
      output: `The arguments are not valid JSON (${(error as Error).message}). Send a JSON object.`,
    };
  }
  try {
    return await tool.run(args, context);
  } catch (error) {
    if (context.signal.aborted) throw new CancelledFailure('interrupted during a tool call');
    // A tool that throws is a failure the model should see, not a crashed step.
    return { status: 'error', output: `The tool failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** The session's workspace on this host, created on first use. */
function workspaceOf(runtime: SessionRuntime, sessionId: string): string {
  const dir = runtime.workspaceFor ? runtime.workspaceFor(sessionId) : join(tmpdir(), 'dh-workspaces', sessionId);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Output budget of a summary request. */
const SUMMARY_MAX_TOKENS = 2048;

/**
 * Whether the next request would use more than `threshold` of the model's context window, decided
 * before anything of the step is logged. Calibrated by the provider: the last response's reported
 * prompt + output tokens, plus an estimate of what was appended since (and the batch about to be
 * claimed). Without a usable report (none yet, or a compaction since) the whole request is estimated.
 */
function overPressure(
  runtime: SessionRuntime,
  session: Session,
  batch: readonly ClaimedMessage[],
  threshold: number,
): boolean {
  const header = session.requestHeader();
  if (!header) return false;
  const window = runtime.profile.models.find((m) => m.id === header.config.model)?.contextWindow;
  if (window === undefined) return false;
  const claimed = estimateTokens(batch.map((m) => ({ role: 'user' as const, content: m.content })));
  const events = session.events;
  let reported = -1;
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (e?.type === 'surface/replace' || e?.type === 'request/header') break; // the report no longer describes the request
    if (e?.type === 'assistant/message' && e.usage) {
      const since = events.slice(i + 1).flatMap((x) => deriveEventMessages(x));
      reported = e.usage.inputUncached + e.usage.cacheRead + e.usage.output + e.usage.reasoning + estimateTokens(since);
      break;
    }
  }
  const tokens =
    reported >= 0
      ? reported + claimed
      : estimateTokens([...(header.prefix ?? []), ...session.deriveMessages()]) +
        Math.ceil(JSON.stringify([header.system ?? '', header.tools ?? []]).length / 4) +
        claimed;
  return tokens >= threshold * window;
}

/** Parallel tool runs per step. */
const TOOL_POOL = 4;

async function mapWithLimit<T, R>(items: readonly T[], limit: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await run(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

function findApprovalReason(session: Session, turn: number, step: number, callId: string): string {
  for (let i = session.events.length - 1; i >= 0; i--) {
    const e = session.events[i];
    if (e?.type === 'approval/request' && e.turn === turn && e.step === step && e.callId === callId) return e.reason;
  }
  return '';
}

/** Store I/O that fails without a classified error (connection lost, database busy) is transient. */
async function storeCall<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof DhError) throw error;
    throw new TransientError(
      'STORE_UNAVAILABLE',
      `session store: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** The activity edge: every failure leaves as a classified Temporal failure; cancellation passes through. */
async function edge<T>(run: () => Promise<T>, onFailure: (error: unknown) => void = () => {}): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof CancelledFailure) throw error;
    onFailure(error);
    throw toApplicationFailure(error);
  }
}
