// The checks every chaos trial ends with, as counts (a run reports them in its table) plus one line per
// problem: nothing lost, nothing twice, nothing left open, every request the gate let through explained
// by the log, the workflow history mirroring the log, and the audit clean.
import type { Client } from '@temporalio/client';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { checkHistoryMirror } from '../../../src/client/history-mirror.js';
import {
  buildCompactionRequest,
  buildRequest,
  Session,
  type EventOf,
  type SessionEvent,
} from '../../../src/core/index.js';
import type { ProviderProfile } from '../../../src/providers/provider-profiles.js';
import { toWireBody } from '../../../src/providers/wire-body.js';
import type { SessionStore } from '../../../src/stores/session-store.js';
import type { AckedMessage } from './chaos-messages.js';

export interface TrialCounts {
  /** Accepted messages missing from the log, or enqueued and then neither claimed nor still queued. */
  lost: number;
  /** A message claimed twice, an event key twice, a seq gap, a second answer or request for a step, a non-idempotent tool run twice. */
  duplicated: number;
  /** A tool call without a result, a step, turn or compaction left open. */
  dangling: number;
  /** A recorded digest that does not re-derive, a body the provider got that no log explains, a gate refusal. */
  gate: number;
  /** checkHistoryMirror disagreed (or could not run). */
  mirror: number;
  /** auditSession failed (counted only where src/audit/audit-session.ts exists). */
  audit: number;
}

export const ZERO_COUNTS: TrialCounts = { lost: 0, duplicated: 0, dangling: 0, gate: 0, mirror: 0, audit: 0 };

export interface TrialCheckInput {
  readonly sessionId: string;
  readonly events: readonly SessionEvent[];
  readonly acked: readonly AckedMessage[];
  /** Chat-completion bodies the provider received, in arrival order. */
  readonly providerBodies: readonly string[];
  /** Tool runs (call ids, one per run) of the tools that log their runs. */
  readonly toolRuns: readonly string[];
  /** Call ids that may run twice (their tool is idempotent). */
  readonly idempotentCall: (callId: string) => boolean;
  readonly profile: ProviderProfile;
  readonly store: SessionStore;
  readonly client: Client;
}

export interface TrialCheck {
  readonly counts: TrialCounts;
  readonly problems: readonly string[];
  /** Whether the audit ran (false: src/audit/audit-session.ts is not there). */
  readonly audited: boolean;
  /** Turns that ended with an error (not a gate refusal): reported, and a problem. */
  readonly turnErrors: number;
  /** Workflow runs of the session (continue-as-new hand-overs + 1), from the mirror check. */
  readonly runs: number;
}

const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T): EventOf<T>[] =>
  events.filter((e): e is EventOf<T> => e.type === type);

/** The part of `auditSession` (src/audit/audit-session.ts) the harness uses. */
type AuditSession = (options: {
  store: SessionStore;
  sessionId: string;
  profile?: ProviderProfile;
  client?: Client;
}) => Promise<{ ok: boolean; failures: readonly string[] }>;

const GATE_CODES = new Set(['REQUEST_DIVERGES_FROM_LOG', 'WIRE_DIGEST_DRIFT', 'REQUEST_NOT_FROZEN']);
const AUDIT_MODULE = fileURLToPath(new URL('../../../src/audit/audit-session.ts', import.meta.url));

export async function checkTrial(input: TrialCheckInput): Promise<TrialCheck> {
  const { events, sessionId } = input;
  const counts: TrialCounts = { ...ZERO_COUNTS };
  const problems: string[] = [];
  const count = (column: keyof TrialCounts, problem: string) => {
    counts[column]++;
    problems.push(`${column}: ${problem}`);
  };

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
  const toolRuns = new Map<string, number>();
  for (const id of input.toolRuns) toolRuns.set(id, (toolRuns.get(id) ?? 0) + 1);
  for (const [id, n] of toolRuns)
    if (n > 1 && !input.idempotentCall(id)) count('duplicated', `the non-idempotent tool call ${id} ran ${n} times`);

  // ---- the gate: every recorded digest re-derives; the provider got nothing the log does not explain ----
  const derived: string[] = [];
  for (const event of events) {
    try {
      if (event.type === 'request/sent') {
        const wire = await toWireBody(buildRequest(sessionId, events.slice(0, event.seq)), input.profile);
        if (wire.digest !== event.digest)
          count('gate', `step ${event.turn}.${event.step}: the recorded digest does not re-derive`);
        derived.push(wire.body);
      } else if (event.type === 'compact/summary') {
        const wire = await toWireBody(
          buildCompactionRequest(sessionId, events.slice(0, event.seq), event.maxTokens),
          input.profile,
        );
        if (wire.digest !== event.requestDigest)
          count('gate', `compaction ${event.compactionId}: the recorded digest does not re-derive`);
        derived.push(wire.body);
      }
    } catch (error) {
      count('gate', `seq ${event.seq}: the request cannot be derived: ${(error as Error).message}`);
    }
  }
  const explained = new Set(derived);
  const unexplained = input.providerBodies.filter((body) => !explained.has(body));
  if (unexplained.length > 0)
    count('gate', `the provider received ${unexplained.length} bodies the log does not explain`);
  // In log order; a request retried after a kill arrives again right after itself.
  const arrived = input.providerBodies.filter((body, i, all) => i === 0 || body !== all[i - 1]);
  if (JSON.stringify(arrived) !== JSON.stringify(derived))
    count(
      'gate',
      `the provider received ${arrived.length} distinct bodies in order, the log derives ${derived.length}`,
    );
  let turnErrors = 0;
  for (const e of ofType(events, 'turn/end')) {
    if (e.reason !== 'error') continue;
    if (e.error && GATE_CODES.has(e.error.code)) count('gate', `turn ${e.turn} ended by the gate: ${e.error.message}`);
    else {
      turnErrors++;
      problems.push(`turn ${e.turn} ended with an error: ${e.error?.code ?? '?'} ${e.error?.message ?? ''}`);
    }
  }

  // ---- the history mirrors the log ----
  let runs = 0;
  try {
    const mirror = await checkHistoryMirror(input.client, input.store, sessionId);
    runs = mirror.runs;
    if (!mirror.ok) count('mirror', mirror.problem ?? 'the history disagrees with the log');
  } catch (error) {
    count('mirror', `the mirror check could not run: ${(error as Error).message}`);
  }

  // ---- the audit, where it exists (another part of the project) ----
  let audited = false;
  if (existsSync(AUDIT_MODULE)) {
    audited = true;
    // Loaded by path, typed here: this file must compile whether or not that module has landed.
    const { auditSession } = (await import(AUDIT_MODULE)) as { auditSession: AuditSession };
    try {
      const report = await auditSession({
        store: input.store,
        sessionId,
        profile: input.profile,
        client: input.client,
      });
      if (!report.ok) count('audit', report.failures.join('; '));
    } catch (error) {
      count('audit', `the audit could not run: ${(error as Error).message}`);
    }
  }
  return { counts, problems, audited, turnErrors, runs };
}
