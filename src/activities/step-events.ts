// Finding what a step already logged, so a retried activity resumes where its previous attempt
// stopped instead of doing anything twice.
import type { EventDraft, EventOf, Session, SessionEvent, StepCost, Usage } from '../core/index.js';
import type { ModelReply } from '../providers/call-model.js';
import type { WireBody } from '../providers/wire-body.js';

export interface StepRecord {
  readonly started: boolean;
  readonly header: EventOf<'request/header'> | undefined;
  readonly sent: EventOf<'request/sent'> | undefined;
  readonly assistant: EventOf<'assistant/message'> | undefined;
  readonly ended: boolean;
}

/** What the log holds for (turn, step), scanning back from the end to the step's start. */
export function stepRecord(session: Session, turn: number, step: number): StepRecord {
  const found: { -readonly [K in keyof StepRecord]: StepRecord[K] } = {
    started: false,
    header: undefined,
    sent: undefined,
    assistant: undefined,
    ended: false,
  };
  const events = session.events;
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i] as SessionEvent;
    if ('turn' in e && e.turn < turn) break;
    if (!('step' in e) || e.turn !== turn || e.step !== step) continue;
    if (e.type === 'step/start') {
      found.started = true;
      break;
    }
    if (e.type === 'request/header') found.header = e;
    else if (e.type === 'request/sent') found.sent = e;
    else if (e.type === 'assistant/message') found.assistant = e;
    else if (e.type === 'step/end') found.ended = true;
  }
  return found;
}

/**
 * The step's `request/sent` draft, made when the request goes out: once the fleet limiter admitted it, so its
 * `at` is when it was sent and the wait before it is not counted as the model's time.
 */
export function sentDraft(turn: number, step: number, wire: Pick<WireBody, 'digest' | 'bytes'>): EventDraft {
  return { type: 'request/sent', at: Date.now(), turn, step, digest: wire.digest, bytes: wire.bytes };
}

/** A provider's answer as the step's `assistant/message` draft, with its usage and cost when known. */
export function answerDraft(
  turn: number,
  step: number,
  message: ModelReply,
  usage: Usage | undefined,
  cost: StepCost | undefined,
): EventDraft {
  return {
    type: 'assistant/message',
    at: Date.now(),
    turn,
    step,
    content: message.content,
    ...(message.reasoning !== undefined ? { reasoning: message.reasoning } : {}),
    toolCalls: message.toolCalls,
    finishReason: message.finishReason,
    ...(usage ? { usage } : {}),
    ...(cost ? { cost } : {}),
    ...(message.interrupted ? { interrupted: true as const } : {}),
  };
}
