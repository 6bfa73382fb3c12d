// The session's signal, update and query handlers. Every signal and update arrives raw
// (raw-message-definitions.ts): a payload the workflow cannot decode is refused here, never thrown where
// it would fail the workflow task.
import { ActivityFailure, ApplicationFailure, setHandler, uuid4 } from '@temporalio/workflow';
import type { z } from 'zod';
import type { InboxTarget, MessageOrigin } from '../core/index.js';
import { resolveApprovalId } from '../core/approval-short-id.js';
import {
  contentLimitProblem,
  jsonContentLimitProblem,
  MessageSignalShape,
  payloadProblem,
  ApprovePayload,
  CompactPayload,
  ConfigurePayload,
  SendUpdatePayload,
  SendUpdateShape,
  messageStatusQuery,
  stateQuery,
  wellFormedMessage,
  type MessageStatusView,
  type SendReceipt,
} from '../shared/session-messages.js';
import { decodeRawArguments } from './decode-raw-arguments.js';
import {
  rawApproveUpdate,
  rawCloseSignal,
  rawCompactUpdate,
  rawConfigureUpdate,
  rawFollowupSignal,
  rawInjectSignal,
  rawInterruptSignal,
  rawSendUpdate,
  rawSteerSignal,
  type RawArguments,
} from './raw-message-definitions.js';
import { stateView, type SessionState } from './session-state.js';
import { registerInArrivalOrder } from './signals-in-arrival-order.js';
import { since } from './workflow-patches.js';
import type { SessionProxies } from './session-proxies.js';
import { absorbLogged } from './with-ingress.js';

/** Longest `lastRejection` kept: it names a payload problem (which can quote a key) and is carried over. */
const MAX_REJECTION_CHARS = 500;
/** Refused message ids the `messageStatus` query remembers (the oldest is forgotten first). */
const REFUSED_IDS_KEPT = 200;

type MessagePayload = z.infer<typeof MessageSignalShape>;

/** Registers every handler; call it before the run's first await (signals buffered since the start run in it). */
export function registerMessageHandlers(state: SessionState, proxies: SessionProxies): void {
  const accept = (
    payload: MessagePayload,
    target: InboxTarget,
    wakeup: boolean,
    origin: MessageOrigin,
  ): SendReceipt => {
    const messageId = payload.messageId ?? uuid4();
    // The limits judged the text as sent (so a recorded run refuses and accepts as it did); the text taken in
    // is made well-formed, the doors' rule. That changes only what an activity is handed, never a command.
    const { content, source } = wellFormedMessage(payload);
    return state.inbox.accept({ messageId, content, source }, target, wakeup, origin, state.aborting, () => Date.now());
  };
  const reject = (signal: string, problem: string, messageId?: string): void => {
    state.rejectedSignals++;
    state.lastRejection = `${signal}: ${problem}`.slice(0, MAX_REJECTION_CHARS);
    // A refusal the sender can look up by its id (messageStatus); never one of an id already accepted.
    if (messageId === undefined || state.inbox.status(messageId).state !== 'unknown') return;
    state.refusedIds.delete(messageId);
    state.refusedIds.set(messageId, problem.slice(0, MAX_REJECTION_CHARS));
    if (state.refusedIds.size > REFUSED_IDS_KEPT) state.refusedIds.delete(state.refusedIds.keys().next().value ?? '');
  };
  const messageSignal =
    (name: string, target: InboxTarget, wakeup: boolean, origin: MessageOrigin) =>
    (...args: RawArguments): void => {
      const decoded = decodeRawArguments(args);
      const parsed = decoded.ok ? MessageSignalShape.safeParse(decoded.first) : null;
      const messageId = parsed?.success ? parsed.data.messageId : undefined;
      if (state.closing) return reject(name, 'the session is closing', messageId);
      if (!decoded.ok) return reject(name, decoded.problem);
      if (parsed === null || !parsed.success) return reject(name, parsed ? payloadProblem(parsed.error) : 'invalid');
      const tooLarge = signalContentProblem(state, parsed.data.content);
      if (tooLarge !== null) return reject(name, `content: ${tooLarge}`, messageId);
      accept(parsed.data, target, wakeup, origin);
    };
  registerInArrivalOrder(() => {
    setHandler(rawFollowupSignal, messageSignal('followup', 'next-turn', true, 'followup'));
    setHandler(rawSteerSignal, messageSignal('steer', 'next-step', true, 'steer'));
    setHandler(rawInjectSignal, messageSignal('inject', 'next-step', false, 'inject'));
    // `interrupt` and `close` take no payload: whatever they carry is never decoded, so it cannot stop them.
    setHandler(rawInterruptSignal, () => {
      if (state.status !== 'running' || state.aborting) return;
      state.aborting = true;
      state.status = 'aborting';
      state.activeScope?.cancel();
    });
    setHandler(rawCloseSignal, () => {
      state.closing = true;
    });
  });

  const refuseWhenClosing = (): void => {
    if (state.closing) {
      throw ApplicationFailure.nonRetryable(`session "${state.sessionId}" is closing`, 'SESSION_CLOSED');
    }
  };
  // Each handler decodes its payload again: a validator does not run on replay. The handlers check the
  // shape only, not the content limits. A handler runs only for an update its validator accepted (now, or
  // in the recorded run), so a later change of the limits (patch `content-limit-characters`) can never
  // make a recorded update fail in its handler.
  setHandler(
    rawSendUpdate,
    (...args: RawArguments) => {
      const parsed = updatePayload('send', SendUpdateShape, args);
      const target = busyTarget(state, parsed);
      const origin: MessageOrigin = target === 'next-turn' ? 'followup' : parsed.wakeup ? 'steer' : 'inject';
      return accept(parsed, target, parsed.wakeup, origin);
    },
    {
      validator: (...args: RawArguments) => {
        const parsed = updatePayload('send', SendUpdatePayload, args);
        refuseWhenClosing();
        if (parsed.ifBusy === 'reject' && turnRunning(state)) {
          throw ApplicationFailure.nonRetryable(
            `session "${state.sessionId}" is busy: turn ${state.currentTurn} is ${state.status}`,
            'SESSION_BUSY',
          );
        }
        const turnNow = state.status === 'idle' ? state.lastTurn : state.currentTurn;
        if (parsed.expectedTurn !== undefined && parsed.expectedTurn !== turnNow) {
          throw ApplicationFailure.nonRetryable(
            `expected turn ${parsed.expectedTurn}, the session is at turn ${turnNow}`,
            'TURN_PRECONDITION_FAILED',
          );
        }
      },
    },
  );
  setHandler(
    rawApproveUpdate,
    (...args: RawArguments) => {
      const parsed = updatePayload('approval', ApprovePayload, args);
      // A short id names the waiting call (the validator refused anything else).
      const callId = resolveApprovalId(parsed.callId, state.pendingApproval?.callId);
      state.approvals.set(callId, {
        callId,
        decision: parsed.decision,
        ...(parsed.by !== undefined ? { by: parsed.by } : {}),
        ...(parsed.reason !== undefined ? { reason: parsed.reason } : {}),
        ...(parsed.remember !== undefined ? { remember: parsed.remember } : {}),
      });
      return { callId, decision: parsed.decision };
    },
    {
      validator: (...args: RawArguments) => {
        const parsed = updatePayload('approval', ApprovePayload, args);
        // One decision per call: a second one (or one for a call nobody asked about) is refused.
        const callId = resolveApprovalId(parsed.callId, state.pendingApproval?.callId);
        if (state.pendingApproval?.callId !== callId || state.approvals.has(callId)) {
          throw ApplicationFailure.nonRetryable(
            `no tool call "${parsed.callId}" is waiting for approval`,
            'NO_PENDING_APPROVAL',
          );
        }
      },
    },
  );
  setHandler(
    rawCompactUpdate,
    (...args: RawArguments) => {
      state.compactRequested = updatePayload('compact request', CompactPayload, args)?.prune ? 'prune' : 'summary';
      return { accepted: true as const };
    },
    {
      validator: (...args: RawArguments) => {
        updatePayload('compact request', CompactPayload, args);
        refuseWhenClosing();
      },
    },
  );
  setHandler(
    rawConfigureUpdate,
    async (...args: RawArguments) => {
      const { overrides, source } = updatePayload('configure', ConfigurePayload, args);
      try {
        const outcome = await proxies.session.configureSession({
          sessionId: state.sessionId,
          knownHead: state.head,
          overridesId: uuid4(),
          overrides,
          ...(source !== undefined ? { source } : {}),
          at: Date.now(),
        });
        absorbLogged(state, outcome);
        return { overrides: outcome.overrides, changed: outcome.changed };
      } catch (error) {
        // The worker's refusal (an unserved model, a tool the agent lacks) is the caller's answer, as it said it.
        if (error instanceof ActivityFailure && error.cause instanceof ApplicationFailure) throw error.cause;
        throw error;
      }
    },
    {
      validator: (...args: RawArguments) => {
        updatePayload('configure', ConfigurePayload, args);
        refuseWhenClosing();
      },
    },
  );
  setHandler(stateQuery, () => stateView(state));
  setHandler(messageStatusQuery, (messageId: unknown): MessageStatusView => {
    const id = typeof messageId === 'string' ? messageId : String(messageId);
    const known = state.inbox.status(id);
    const refused = state.refusedIds.get(id);
    if (known.state === 'unknown' && refused !== undefined) return { messageId: id, state: 'refused', reason: refused };
    if (known.state !== 'handled') return { messageId: id, ...known };
    const turn = state.inbox.landedTurn(id, state.currentTurn);
    return {
      messageId: id,
      ...known,
      ...(turn !== undefined ? { turn } : {}),
      ...(state.inbox.wasDiscarded(id) ? { discarded: true as const } : {}),
    };
  });
}

/** A turn is running or being interrupted: what a send's `ifBusy` applies to. */
function turnRunning(state: SessionState): boolean {
  return state.status === 'running' || state.status === 'aborting';
}

/** The queue a send goes to: its `ifBusy` choice while a turn runs, else its own target. */
function busyTarget(state: SessionState, payload: z.infer<typeof SendUpdateShape>): InboxTarget {
  if (payload.ifBusy === undefined || payload.ifBusy === 'reject' || !turnRunning(state)) return payload.target;
  return payload.ifBusy === 'queue' ? 'next-turn' : 'next-step';
}

/**
 * The content limit a signal is held to. It counts characters of content now; runs recorded before
 * patch `content-limit-characters` counted the content's JSON form, and replaying one must refuse and
 * accept what it did then. The patch is asked only when the two rules disagree (rare), so an ordinary
 * history carries no marker.
 */
function signalContentProblem(state: SessionState, content: MessagePayload['content']): string | null {
  const now = contentLimitProblem(content);
  const before = jsonContentLimitProblem(content);
  if ((now === null) === (before === null)) return now;
  return since(state, 'content-limit-characters') ? now : before;
}

/** An update's payload, decoded and parsed; a failure is the update's INVALID_PAYLOAD refusal. */
function updatePayload<T>(what: string, schema: z.ZodType<T>, args: RawArguments): T {
  const decoded = decodeRawArguments(args);
  if (!decoded.ok) throw ApplicationFailure.nonRetryable(`invalid ${what}: ${decoded.problem}`, 'INVALID_PAYLOAD');
  const parsed = schema.safeParse(decoded.first);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(`invalid ${what}: ${payloadProblem(parsed.error)}`, 'INVALID_PAYLOAD');
  }
  return parsed.data;
}
