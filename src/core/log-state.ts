// The log's structural state machine: which turn and step are open, which tool calls wait for an
// answer, what the inbox holds. `admit` checks one event against the rules and then applies it.
import type { EventOf, InboxTarget, MessageOrigin, SessionEvent } from './events.js';
import type { Message, UserContent } from './messages.js';
import { LogStructureError } from './errors.js';
import type { AgentRef } from './agent-fields.js';

export interface QueuedMessage {
  readonly messageId: string;
  readonly target: InboxTarget;
  readonly wakeup: boolean;
  readonly origin: MessageOrigin;
  readonly source?: string;
  readonly content: UserContent;
  /** Seq of its `inbox/enqueue`: arrival order. */
  readonly enqueuedAt: number;
  /** Set by `inbox/downgrade`: a waking send that arrived while a turn was dying. */
  readonly downgraded: boolean;
}

export interface ToolCallState {
  readonly callId: string;
  readonly name: string;
  started: boolean;
  answered: boolean;
  /** Set by `approval/request`, cleared by its `approval/decision`. */
  approval: 'none' | 'pending' | 'approve' | 'deny' | 'timeout';
  /** Set by the call's `policy/verdict` (at most one): a retried attempt acts on it instead of judging again. */
  verdict: EventOf<'policy/verdict'> | null;
}

export interface OpenStep {
  readonly turn: number;
  readonly step: number;
  /** Seq of `step/start`. */
  readonly startSeq: number;
  assistantSeq: number | null;
  /** Seq of the step's `request/sent`: the model's answer must follow a recorded request. */
  requestSeq: number | null;
  /** Tool calls of this step's assistant message, in model order. */
  readonly calls: Map<string, ToolCallState>;
  /** Messages claimed for this step that have not been rendered as `user/message` yet. */
  readonly claimed: Set<string>;
}

export class LogState {
  formatVersion: number | null = null;
  /** The agent `session/start` names (null: a version-1 log, which ran the default agent). */
  agent: AgentRef | null = null;
  parent: { sessionId: string; seedLength: number } | null = null;
  seedEnded = false;
  lastTurn = 0;
  openTurn: number | null = null;
  /** Last step number started in the open turn (0 before its first step). */
  lastStep = 0;
  openStep: OpenStep | null = null;
  /** Claimed for the next step of the open turn, before its `step/start`. */
  pendingClaim: { step: number; messageIds: readonly string[] } | null = null;
  readonly queue = new Map<string, QueuedMessage>();
  readonly seenMessageIds = new Set<string>();
  openCompaction: string | null = null;
  /** Rules remembered by "approve (or deny) and remember", in the order they were logged. */
  readonly sessionRules: EventOf<'policy/rule'>[] = [];
  /** Number of messages on the surface (to validate replace ranges without deriving). */
  surfaceLength = 0;
  lastTurnEnd: EventOf<'turn/end'> | null = null;

  constructor(readonly sessionId: string) {}

  /**
   * Checks `event` (already schema-valid, seq = log length) against the structural rules, then
   * applies it. Throws LogStructureError naming the session and seq; on throw nothing was applied.
   * `surfaceDelta` is how the event changes the surface length (computed by the caller's projection).
   */
  admit(event: SessionEvent, surfaceAfter: (lengthBefore: number) => number): void {
    const fail = (problem: string): never => {
      throw new LogStructureError(this.sessionId, event.seq, `${event.type}: ${problem}`);
    };
    if (event.seq === 0 && event.type !== 'session/start') fail('the first event must be session/start');
    switch (event.type) {
      case 'session/start':
        if (event.seq !== 0) fail('only allowed at seq 0');
        if (event.sessionId !== this.sessionId) fail(`belongs to session "${event.sessionId}"`);
        this.formatVersion = event.formatVersion;
        this.agent = event.agent ?? null;
        this.parent = event.parent ?? null;
        break;
      case 'session/seed-end':
        // A fork of a fork copies its parent's marker too: markers inside the seed are history.
        if (!this.parent) return fail('only a forked session has a seed');
        if (event.seq > this.parent.seedLength) fail(`must directly follow the seed (seq ${this.parent.seedLength})`);
        if (event.seq === this.parent.seedLength) this.seedEnded = true;
        break;
      case 'request/header':
        this.requireStepBeforeModel(event, fail);
        break;
      case 'agent/overrides':
        break; // no structural rule: it may land anywhere, even between a running step's rows
      case 'inbox/enqueue':
        if (this.seenMessageIds.has(event.messageId)) fail(`message id "${event.messageId}" was already enqueued`);
        this.seenMessageIds.add(event.messageId);
        this.queue.set(event.messageId, {
          messageId: event.messageId,
          target: event.target,
          wakeup: event.wakeup,
          origin: event.origin,
          ...(event.source !== undefined ? { source: event.source } : {}),
          content: event.content,
          enqueuedAt: event.seq,
          downgraded: false,
        });
        break;
      case 'inbox/claim': {
        if (this.openTurn !== event.turn) fail(`turn ${event.turn} is not the open turn`);
        if (this.openStep) fail('a claim belongs before its step starts');
        if (this.pendingClaim) fail('the next step already has a claim');
        if (event.step !== this.lastStep + 1) fail(`claims for step ${event.step}, next step is ${this.lastStep + 1}`);
        const nextTurnCount = event.messageIds.filter((id) => this.queue.get(id)?.target === 'next-turn').length;
        if (nextTurnCount > 1) fail('at most one next-turn message per turn');
        const seen = new Set<string>();
        event.messageIds.forEach((id, index) => {
          const queued = this.queue.get(id);
          if (!queued) fail(`message "${id}" is not queued`);
          if (seen.has(id)) fail(`message "${id}" claimed twice`);
          seen.add(id);
          if (queued?.target === 'next-turn') {
            if (event.step !== 1) fail(`next-turn message "${id}" can only be claimed at a turn's first step`);
            if (index !== 0) fail(`next-turn message "${id}" must come first in the claim`);
          }
        });
        for (const id of event.messageIds) this.queue.delete(id);
        this.pendingClaim = { step: event.step, messageIds: event.messageIds };
        break;
      }
      case 'inbox/discard':
        for (const id of event.messageIds) if (!this.queue.has(id)) fail(`message "${id}" is not queued`);
        for (const id of event.messageIds) this.queue.delete(id);
        break;
      case 'inbox/downgrade': {
        const queued = this.queue.get(event.messageId);
        if (!queued) fail(`message "${event.messageId}" is not queued`);
        if (queued?.target !== 'next-turn') fail('a downgraded message is queued as next-turn');
        if (queued) this.queue.set(event.messageId, { ...queued, downgraded: true });
        break;
      }
      case 'turn/start':
        if (this.openTurn !== null) fail(`turn ${this.openTurn} is still open`);
        if (event.turn !== this.lastTurn + 1) fail(`expected turn ${this.lastTurn + 1}`);
        this.openTurn = event.turn;
        this.lastTurn = event.turn;
        this.lastStep = 0;
        break;
      case 'turn/end':
        if (this.openTurn !== event.turn) fail(`turn ${event.turn} is not open`);
        if (this.openStep) fail(`step ${this.openStep.step} is still open`);
        this.openTurn = null;
        this.pendingClaim = null;
        this.lastTurnEnd = event;
        break;
      case 'step/start':
        if (this.openTurn !== event.turn) fail(`turn ${event.turn} is not open`);
        if (this.openStep) fail(`step ${this.openStep.step} is still open`);
        if (event.step !== this.lastStep + 1) fail(`expected step ${this.lastStep + 1}`);
        if (this.openCompaction) fail(`compaction "${this.openCompaction}" is in progress`);
        if (this.pendingClaim && this.pendingClaim.step !== event.step) fail('the pending claim is for another step');
        this.openStep = {
          turn: event.turn,
          step: event.step,
          startSeq: event.seq,
          assistantSeq: null,
          requestSeq: null,
          calls: new Map(),
          claimed: new Set(this.pendingClaim?.messageIds ?? []),
        };
        this.pendingClaim = null;
        this.lastStep = event.step;
        break;
      case 'step/end': {
        const step = this.requireStep(event, fail);
        const open = [...step.calls.values()].filter((c) => !c.answered).map((c) => c.callId);
        if (open.length > 0) fail(`tool calls without a result: ${open.join(', ')}`);
        this.openStep = null;
        break;
      }
      case 'user/message': {
        const step = this.requireStepBeforeModel(event, fail);
        if (!step.claimed.has(event.messageId)) fail(`message "${event.messageId}" was not claimed for this step`);
        step.claimed.delete(event.messageId);
        break;
      }
      case 'request/sent': {
        const step = this.requireStepBeforeModel(event, fail);
        if (step.requestSeq !== null)
          fail(`step ${event.turn}.${event.step} already recorded its request (seq ${step.requestSeq})`);
        step.requestSeq = event.seq;
        break;
      }
      case 'assistant/message': {
        const step = this.requireStepBeforeModel(event, fail);
        // Model-visible <=> logged: an answer the log holds must answer a request the log recorded.
        if (step.requestSeq === null) fail(`step ${event.turn}.${event.step} has no recorded request (request/sent)`);
        for (const call of event.toolCalls) {
          if (step.calls.has(call.id)) fail(`tool call id "${call.id}" repeats`);
          step.calls.set(call.id, {
            callId: call.id,
            name: call.name,
            started: false,
            answered: false,
            approval: 'none',
            verdict: null,
          });
        }
        step.assistantSeq = event.seq;
        break;
      }
      case 'approval/request': {
        const call = this.requireCall(event, fail);
        if (call.started) fail(`tool call "${event.callId}" already started`);
        if (call.approval !== 'none')
          fail(
            `tool call "${event.callId}" already has an approval ${call.approval === 'pending' ? 'request' : 'decision'}`,
          );
        call.approval = 'pending';
        break;
      }
      case 'policy/verdict': {
        const call = this.requireCall(event, fail);
        if (call.name !== event.name) fail(`tool call "${event.callId}" is "${call.name}", not "${event.name}"`);
        if (call.verdict) fail(`tool call "${event.callId}" already has a policy verdict (seq ${call.verdict.seq})`);
        if (call.started || call.approval !== 'none') fail(`tool call "${event.callId}" was judged after it went on`);
        call.verdict = event;
        break;
      }
      case 'policy/rule': {
        const call = this.requireStep(event, fail).calls.get(event.callId);
        if (!call) fail(`no tool call "${event.callId}" in this step`);
        if (this.sessionRules.some((r) => r.rule.id === event.rule.id))
          fail(`rule "${event.rule.id}" is already logged`);
        this.sessionRules.push(event);
        break;
      }
      case 'approval/decision': {
        const call = this.requireCall(event, fail);
        if (call.approval !== 'pending') fail(`tool call "${event.callId}" has no pending approval`);
        call.approval = event.decision;
        break;
      }
      case 'tool/start': {
        const call = this.requireCall(event, fail);
        if (call.started) fail(`tool call "${event.callId}" already started`);
        if (call.approval === 'pending') fail(`tool call "${event.callId}" waits for approval`);
        if (call.approval === 'deny' || call.approval === 'timeout')
          fail(`tool call "${event.callId}" was not approved`);
        call.started = true;
        break;
      }
      case 'tool/result': {
        const call = this.requireCall(event, fail);
        if (call.name !== event.name) fail(`tool call "${event.callId}" is "${call.name}", not "${event.name}"`);
        call.answered = true;
        break;
      }
      case 'compact/start':
        if (this.openCompaction) fail(`compaction "${this.openCompaction}" is already in progress`);
        if (this.openStep) fail('cannot compact inside an open step');
        this.openCompaction = event.compactionId;
        break;
      case 'compact/summary':
      case 'compact/refused':
      case 'compact/end':
        if (this.openCompaction !== event.compactionId) fail(`compaction "${event.compactionId}" is not in progress`);
        if (event.type === 'compact/end') this.openCompaction = null;
        break;
      case 'surface/replace':
        if (this.openStep) fail('cannot replace the surface inside an open step');
        if (event.range.end >= this.surfaceLength) {
          fail(`range ${event.range.start}..${event.range.end} is outside the surface (length ${this.surfaceLength})`);
        }
        break;
    }
    this.surfaceLength = surfaceAfter(this.surfaceLength);
  }

  private requireStep(event: { turn: number; step: number }, fail: (p: string) => never): OpenStep {
    const step = this.openStep;
    if (!step || step.turn !== event.turn || step.step !== event.step) {
      return fail(`step ${event.turn}.${event.step} is not open`);
    }
    return step;
  }

  /** Things that shape the step's request must come before the model's answer. */
  private requireStepBeforeModel(event: { turn: number; step: number }, fail: (p: string) => never): OpenStep {
    const step = this.requireStep(event, fail);
    if (step.assistantSeq !== null) fail('the step already has the model response');
    return step;
  }

  private requireCall(
    event: { turn: number; step: number; callId: string },
    fail: (p: string) => never,
  ): ToolCallState {
    const step = this.requireStep(event, fail);
    const call = step.calls.get(event.callId);
    if (!call) return fail(`no tool call "${event.callId}" in this step`);
    if (call.answered) fail(`tool call "${event.callId}" already has a result`);
    return call;
  }
}

/**
 * Checks that every tool message answers a call of the assistant message right before its run of
 * tool messages, and that every call is answered before any other message. Returns the first
 * problem or null. Used to validate surface replaces, which may move messages around.
 */
export function findPairingProblem(messages: readonly Message[], allowTrailingOpen: boolean): string | null {
  let pending = new Set<string>();
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (!message) continue;
    if (message.role === 'tool') {
      if (!pending.delete(message.toolCallId))
        return `message ${i} answers no open tool call ("${message.toolCallId}")`;
      continue;
    }
    if (pending.size > 0) return `message ${i} separates tool calls from their results (${[...pending].join(', ')})`;
    pending = new Set(message.role === 'assistant' ? (message.toolCalls ?? []).map((c) => c.id) : []);
  }
  if (pending.size > 0 && !allowTrailingOpen)
    return `tool calls without results at the end: ${[...pending].join(', ')}`;
  return null;
}
