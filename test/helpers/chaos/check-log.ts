// The checks one session log must pass after a chaos trial, the trial's own and each child's alike:
// contiguous seqs and unique keys, a log the core accepts, every accepted message logged and claimed
// once, one request and one answer per step, every tool call answered once, nothing left open.
import { Session, type SessionEvent } from '../../../src/core/index.js';
import type { AckedMessage } from './chaos-messages.js';
import { ofType, type Tally } from './trial-counts.js';

export interface LogCheckInput {
  readonly sessionId: string;
  readonly events: readonly SessionEvent[];
  /** Messages the session accepted (a child's: its delegated task). */
  readonly acked: readonly AckedMessage[];
  /** Prefixes each problem (`child <id>: `); empty for the trial's own session. */
  readonly where: string;
}

/** Error codes of turns the outbound gate ended (a gate failure, not a turn error). */
export const GATE_CODES = new Set(['REQUEST_DIVERGES_FROM_LOG', 'WIRE_DIGEST_DRIFT', 'REQUEST_NOT_FROZEN']);

export function checkLog(tally: Tally, input: LogCheckInput): void {
  const { events, sessionId, where } = input;
  const count = (column: Parameters<Tally['count']>[0], problem: string) => tally.count(column, problem, where);

  // ---- the log itself: seqs contiguous, keys unique, and a log the core accepts ----
  events.forEach((e, i) => {
    if (e.seq !== i) count('duplicated', `seq ${e.seq} at position ${i} (seqs must be contiguous)`);
  });
  const keys = new Set<string>();
  for (const e of events) {
    if (keys.has(e.key)) count('duplicated', `event key ${e.key} twice`);
    keys.add(e.key);
  }
  let session: Session | null = null;
  try {
    session = new Session(sessionId, events);
  } catch (error) {
    count('dangling', `the core refuses the log: ${(error as Error).message}`);
  }

  // ---- messages: every accepted one enqueued; each claimed at most once, or still queued ----
  const enqueued = new Map<string, number>();
  for (const e of ofType(events, 'inbox/enqueue')) enqueued.set(e.messageId, (enqueued.get(e.messageId) ?? 0) + 1);
  const claimed = new Map<string, number>();
  for (const e of ofType(events, 'inbox/claim'))
    for (const id of e.messageIds) claimed.set(id, (claimed.get(id) ?? 0) + 1);
  const discarded = new Set(ofType(events, 'inbox/discard').flatMap((e) => e.messageIds));
  const userMessages = new Map<string, number>();
  for (const e of ofType(events, 'user/message'))
    if (e.messageId !== undefined) userMessages.set(e.messageId, (userMessages.get(e.messageId) ?? 0) + 1);
  const queued = new Set(session ? [...session.state.queue.keys()] : []);
  const accepted = new Map(input.acked.map((m) => [m.messageId, m]));
  for (const [id, message] of accepted) {
    if (!enqueued.has(id))
      count('lost', `${message.kind} ${id} (sent via ${message.via}) was accepted but never logged`);
    else if (message.kind !== 'inject' && !claimed.has(id))
      count('lost', `${message.kind} ${id} is logged but was never claimed (the session went idle without it)`);
  }
  for (const [id, n] of enqueued) {
    if (n > 1) count('duplicated', `message ${id} enqueued ${n} times`);
    if (!claimed.has(id) && !queued.has(id) && !discarded.has(id))
      count('lost', `message ${id} was enqueued, then neither claimed nor still queued`);
  }
  for (const [id, n] of claimed) if (n > 1) count('duplicated', `message ${id} claimed ${n} times`);
  for (const [id, n] of userMessages) if (n > 1) count('duplicated', `message ${id} entered the transcript ${n} times`);

  // ---- steps: one request and one answer each; tool calls answered exactly once; nothing open ----
  const stepIds = (type: 'step/start' | 'step/end') => ofType(events, type).map((e) => `${e.turn}.${e.step}`);
  const ended = new Set(stepIds('step/end'));
  for (const step of stepIds('step/start')) {
    if (!ended.has(step)) count('dangling', `step ${step} never ended`);
    const [turn, n] = step.split('.').map(Number);
    const of = <T extends SessionEvent['type']>(type: T) =>
      ofType(events, type).filter((e) => 'turn' in e && e.turn === turn && 'step' in e && e.step === n);
    if (of('request/sent').length > 1)
      count('duplicated', `step ${step} recorded ${of('request/sent').length} requests`);
    if (of('assistant/message').length > 1)
      count('duplicated', `step ${step} logged ${of('assistant/message').length} answers`);
  }
  const turnsEnded = new Set(ofType(events, 'turn/end').map((e) => e.turn));
  for (const e of ofType(events, 'turn/start'))
    if (!turnsEnded.has(e.turn)) count('dangling', `turn ${e.turn} never ended`);
  const compactionsEnded = new Set(ofType(events, 'compact/end').map((e) => e.compactionId));
  for (const e of ofType(events, 'compact/start'))
    if (!compactionsEnded.has(e.compactionId)) count('dangling', `compaction ${e.compactionId} never ended`);
  const calls = ofType(events, 'assistant/message').flatMap((m) => m.toolCalls.map((c) => c.id));
  const results = new Map<string, number>();
  for (const r of ofType(events, 'tool/result')) results.set(r.callId, (results.get(r.callId) ?? 0) + 1);
  for (const id of calls) if (!results.has(id)) count('dangling', `tool call ${id} has no result`);
  for (const [id, n] of results) {
    if (n > 1) count('duplicated', `tool call ${id} has ${n} results`);
    if (!calls.includes(id)) count('dangling', `tool result ${id} answers no call`);
  }
  const starts = ofType(events, 'tool/start').map((s) => s.callId);
  for (const id of new Set(starts.filter((s, i) => starts.indexOf(s) !== i)))
    count('duplicated', `tool call ${id} started twice`);

  // ---- how turns ended: by the gate (a gate failure) or by an error ----
  for (const e of ofType(events, 'turn/end')) {
    if (e.reason !== 'error') continue;
    if (e.error && GATE_CODES.has(e.error.code)) count('gate', `turn ${e.turn} ended by the gate: ${e.error.message}`);
    else
      tally.turnError(`turn ${e.turn} ended with an error: ${e.error?.code ?? '?'} ${e.error?.message ?? ''}`, where);
  }
}
