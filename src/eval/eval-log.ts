// An evaluation's log (pure): a fork-like child of the source session that ends where one recorded step's
// request was sent, marked `eval`; and the facts of a step's answer as a log records them.
import { sha256Digest } from '../core/canonical-json.js';
import { toEvent, type EventDraft, type EventOf, type SessionEvent } from '../core/events.js';
import type { RequestHeader } from '../core/request-header.js';
import { DhError } from '../core/errors.js';
import { Session } from '../core/session.js';
import { MAX_SESSION_ID_CHARS } from '../core/session-id.js';
import { SESSION_FORMAT_VERSION } from '../core/version.js';
import type { AnswerFacts } from './step-diff.js';

export const EVAL_POINT_INVALID = 'EVAL_POINT_INVALID';

/** The prefix every eval log's id starts with (`dh ls` leaves them out unless asked). */
export const EVAL_SESSION_PREFIX = 'eval.';

/**
 * The eval log's id for one step of one run: readable, a session id by the one rule (src/core/session-id.ts), and distinct per
 * (run, source, seq) — a long source id is cut and completed with a digest of the whole.
 */
export function evalSessionIdFor(runId: string, sourceSessionId: string, sentSeq: number): string {
  const id = (source: string) => `${EVAL_SESSION_PREFIX}${runId}.${source}.s${sentSeq}`;
  const cut = (length: number) =>
    `${sourceSessionId.slice(0, length - 16)}-${sha256Digest(sourceSessionId).slice(7, 22)}`;
  const source = sourceSessionId.length <= 60 ? sourceSessionId : cut(60);
  const overhead = id('').length;
  if (overhead + source.length <= MAX_SESSION_ID_CHARS) return id(source);
  // A long run id and a long source: the source is cut shorter, so the id stays a session id.
  return id(cut(MAX_SESSION_ID_CHARS - overhead));
}

/** A recorded step as the log holds it: its request, and its answer when one was logged. */
export interface RecordedStep {
  readonly sent: EventOf<'request/sent'>;
  readonly answer: EventOf<'assistant/message'> | null;
}

/** The step whose `request/sent` is at `sentSeq`; throws EVAL_POINT_INVALID when there is none. */
export function recordedStepAt(events: readonly SessionEvent[], sentSeq: number): RecordedStep {
  const sent = events[sentSeq];
  if (sent?.type !== 'request/sent') {
    throw new DhError(EVAL_POINT_INVALID, `seq ${sentSeq} is not a recorded request (request/sent)`, { sentSeq });
  }
  let answer: EventOf<'assistant/message'> | null = null;
  for (let i = sentSeq + 1; i < events.length; i++) {
    const event = events[i];
    if (event === undefined || event.type === 'step/end' || event.type === 'turn/end') break;
    if (event.type === 'assistant/message' && event.turn === sent.turn && event.step === sent.step) {
      answer = event;
      break;
    }
  }
  return { sent, answer };
}

/** Every recorded step of a log, in order (`firstOfTurn`: only each turn's first step). */
export function recordedSteps(
  events: readonly SessionEvent[],
  options: { firstOfTurn?: boolean } = {},
): RecordedStep[] {
  const steps: RecordedStep[] = [];
  for (const event of events) {
    if (event.type !== 'request/sent') continue;
    if (options.firstOfTurn && event.step !== 1) continue;
    steps.push(recordedStepAt(events, event.seq));
  }
  return steps;
}

/**
 * The eval log up to its request: `session/start` naming the source as parent and the run, the source's events
 * before the step's own `request/header` (or before its `request/sent` when the step logged none), then
 * `session/seed-end`, the changed header for the step, and whatever the source logged between its header and its
 * request (the step stays open). The changed header takes the source header's slot: one header per step.
 */
export function evalLogEvents(
  source: Session,
  options: {
    readonly evalSessionId: string;
    readonly runId: string;
    readonly sentSeq: number;
    readonly at: number;
    readonly header: RequestHeader;
  },
): Session {
  const { evalSessionId, runId, sentSeq, at, header } = options;
  const { sent } = recordedStepAt(source.events, sentSeq);
  const stepHeader = source.events
    .slice(0, sentSeq)
    .findLast((e) => e.type === 'request/header' && e.turn === sent.turn && e.step === sent.step);
  const seedLength = stepHeader?.seq ?? sentSeq;
  const log = new Session(evalSessionId, [
    toEvent(
      {
        type: 'session/start',
        at,
        sessionId: evalSessionId,
        formatVersion: SESSION_FORMAT_VERSION,
        ...(source.state.agent ? { agent: source.state.agent } : {}),
        parent: { sessionId: source.sessionId, seedLength },
        eval: { runId },
      },
      0,
    ),
    ...source.events.slice(1, seedLength),
  ]);
  log.append(
    { type: 'session/seed-end', at },
    { type: 'request/header', at, reason: 'change', turn: sent.turn, step: sent.step, header },
    ...source.events.slice(seedLength + 1, sentSeq).map(asDraft),
  );
  return log;
}

/** An event without its place (seq, key): appended again elsewhere, it takes the place it lands on. */
function asDraft(event: SessionEvent): EventDraft {
  const { seq: _seq, key: _key, ...draft } = event;
  return draft;
}

/** The evaluated step's request in an eval log (its first `request/sent` after the seed), or null before it is sent. */
export function candidateSentSeq(events: readonly SessionEvent[]): number | null {
  const start = events[0];
  const seedLength = start?.type === 'session/start' ? (start.parent?.seedLength ?? 0) : 0;
  const sent = events.find((e) => e.seq > seedLength && e.type === 'request/sent');
  return sent !== undefined ? sent.seq : null;
}

/**
 * A turn from the step whose request is at `sentSeq` to its end, as one answer: the last answer's text and finish
 * reason, every tool call in order, usage and cost summed, latency from that request to the last answer. Null
 * when no answer was logged. `steps` counts the answers.
 */
export function turnFacts(events: readonly SessionEvent[], sentSeq: number): (AnswerFacts & { steps: number }) | null {
  const { sent } = recordedStepAt(events, sentSeq);
  const answers: EventOf<'assistant/message'>[] = [];
  for (let i = sentSeq + 1; i < events.length; i++) {
    const event = events[i];
    if (event === undefined || (event.type === 'turn/end' && event.turn === sent.turn)) break;
    if (event.type === 'assistant/message' && event.turn === sent.turn) answers.push(event);
  }
  const last = answers.at(-1);
  if (last === undefined) return null;
  const usages = answers.flatMap((a) => (a.usage ? [a.usage] : []));
  const costs = answers.flatMap((a) => (a.cost ? [a.cost.usd] : []));
  return {
    content: last.content,
    toolCalls: answers.flatMap((a) => a.toolCalls),
    finishReason: last.finishReason,
    usage:
      usages.length === 0
        ? null
        : usages.reduce((sum, u) => ({
            inputUncached: sum.inputUncached + u.inputUncached,
            cacheRead: sum.cacheRead + u.cacheRead,
            output: sum.output + u.output,
            reasoning: sum.reasoning + u.reasoning,
          })),
    costUsd: costs.length === 0 ? null : costs.reduce((a, b) => a + b, 0),
    latencyMs: Math.max(0, last.at - sent.at),
    steps: answers.length,
  };
}

/** What a logged step's answer amounts to; latency is from its `request/sent` to its `assistant/message`. */
export function answerFacts(step: RecordedStep): AnswerFacts | null {
  const { sent, answer } = step;
  if (answer === null) return null;
  return {
    content: answer.content,
    ...(answer.reasoning !== undefined ? { reasoning: answer.reasoning } : {}),
    toolCalls: answer.toolCalls,
    finishReason: answer.finishReason,
    usage: answer.usage ?? null,
    costUsd: answer.cost?.usd ?? null,
    latencyMs: Math.max(0, answer.at - sent.at),
  };
}

/** The run an eval log belongs to, or null for any other log. */
export function evalRunOf(events: readonly SessionEvent[]): string | null {
  const start = events[0];
  return start?.type === 'session/start' ? (start.eval?.runId ?? null) : null;
}
