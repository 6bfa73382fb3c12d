// The session's inbox: messages accepted but not yet logged (the ingress), logged ones waiting in the
// queue, the dedupe window, the wake latch, the claim of the step in flight and the turn each message landed
// in. Pure: the workflow hands it ids, turns and times, so every rule here is tested without a server.
import type { InboxTarget, MessageOrigin, UserContent } from '../core/index.js';
import { RECENT_MESSAGE_IDS, toQueuedRef, type IngressMessage, type QueuedRef } from '../shared/activity-contracts.js';
import type { MessageStatusView, SendReceipt } from '../shared/session-messages.js';

/** What the inbox hands over to a continued run (fields of `SessionCarry`). */
export interface InboxCarry {
  readonly queue: readonly QueuedRef[];
  readonly ingress: readonly IngressMessage[];
  readonly wakeLatched: boolean;
  readonly recentMessageIds: readonly string[];
  /** The turns the latest messages landed in, oldest first (absent in older carries). */
  readonly landedTurns?: readonly (readonly [messageId: string, turn: number])[];
}

/** Landed turns remembered (the oldest is forgotten first): a caller waiting for a message's turn polls far more often. */
export const LANDED_TURNS_KEPT = 64;
/** Ids discarded at close the `messageStatus` query can name (the run ends right after). */
const DISCARDED_KEPT = 200;

/** A message as a signal or update delivers it, its id already chosen (the sender's, or a fresh one). */
export interface IncomingMessage {
  readonly messageId: string;
  readonly content: UserContent;
  readonly source?: string | undefined;
}

export class Inbox {
  private queue: QueuedRef[];
  private ingress: IngressMessage[];
  private latched: boolean;
  private readonly recentIds: string[];
  private readonly seenIds: Set<string>;
  /**
   * What the model step in flight claimed: those messages stay in `queue` until its outcome is absorbed
   * (or the turn ends), but nothing waits behind them any more (see `accept`'s position).
   */
  private inFlightClaim: ReadonlySet<string> = new Set();
  /** Ingress handed to an append activity in flight: not handed to another until absorbed or released. */
  private readonly passedIds = new Set<string>();
  /**
   * For queued messages whose append outcome was absorbed here: the log's head that outcome reported. A
   * closeTurn's queue reflects exactly the rows below its own head, so `replaceQueue` keeps what was logged
   * above it (by the concurrent appendInbox, after closeTurn read the log).
   */
  private readonly loggedBelow = new Map<string, number>();
  /** Ids claimed by a step of the running turn (in flight, logged, or handed back): see `landTurn`. */
  private readonly turnClaims = new Set<string>();
  /** Message id → the turn it landed in (a step of it logged the message), the latest `LANDED_TURNS_KEPT`. */
  private readonly landed: Map<string, number>;
  /** Ids that left the queue unclaimed (`drop`: discarded at close). */
  private readonly discarded = new Set<string>();

  constructor(carry?: InboxCarry) {
    this.landed = new Map(carry?.landedTurns ?? []);
    this.queue = [...(carry?.queue ?? [])];
    this.ingress = [...(carry?.ingress ?? [])];
    this.latched = carry?.wakeLatched ?? false;
    this.recentIds = [...(carry?.recentMessageIds ?? [])];
    this.seenIds = new Set(this.recentIds);
  }

  /** Adds an id to the dedupe window; the oldest falls out past `RECENT_MESSAGE_IDS` (the store is the authority). */
  remember(messageId: string): void {
    this.seenIds.add(messageId);
    this.recentIds.push(messageId);
    if (this.recentIds.length > RECENT_MESSAGE_IDS) this.seenIds.delete(this.recentIds.shift() ?? '');
  }

  /**
   * Takes a message into the ingress, or names it a duplicate. `turnDying`: an interrupt is ending the
   * turn in flight. `now` gives the time of arrival (asked only for a message taken in).
   */
  accept(
    message: IncomingMessage,
    requested: InboxTarget,
    wakeup: boolean,
    origin: MessageOrigin,
    turnDying: boolean,
    now: () => number,
  ): SendReceipt {
    const { messageId } = message;
    if (this.seenIds.has(messageId)) {
      return { messageId, position: -1, target: requested, duplicate: true, downgraded: false };
    }
    // A waking next-step send aimed at a dying turn would never be claimed: requeue it for the next
    // turn and latch the wake, so a fresh turn starts once the session is idle again.
    const downgraded = turnDying && requested === 'next-step' && wakeup;
    const target: InboxTarget = downgraded ? 'next-turn' : requested;
    if (downgraded) this.latched = true;
    // Ahead of it: what waits in its queue, less what the step in flight has claimed already.
    const position = this.waiting().filter((m) => m.target === target && !this.inFlightClaim.has(m.messageId)).length;
    this.ingress.push({
      messageId,
      target,
      wakeup,
      origin,
      ...(message.source !== undefined ? { source: message.source } : {}),
      content: message.content,
      downgraded,
      at: now(),
    });
    this.remember(messageId);
    return { messageId, position, target, duplicate: false, downgraded };
  }

  /**
   * The ingress not yet handed to an append activity in flight, to hand to one (which logs it) before
   * absorbing its outcome. Handed messages are not handed again until `absorb` or `release`.
   */
  pass(): readonly IngressMessage[] {
    const passed = this.ingress.filter((m) => !this.passedIds.has(m.messageId));
    for (const m of passed) this.passedIds.add(m.messageId);
    return passed;
  }

  /** The activity handed `passed` did not log them (interrupted, failed): the next one is handed them again. */
  release(passed: readonly IngressMessage[]): void {
    for (const m of passed) this.passedIds.delete(m.messageId);
  }

  /** Accepted messages no append activity in flight was handed. */
  get unpassed(): number {
    return this.ingress.length - this.passedIds.size;
  }

  /**
   * An append activity logged `passed`: they leave the ingress and join the queue, less what the step
   * `claimed` (claimed messages leave the queue too). Messages accepted while it ran stay in the ingress.
   */
  absorb(passed: readonly IngressMessage[], claimed: readonly string[] = [], head?: number): void {
    const passedIds = new Set(passed.map((m) => m.messageId));
    this.release(passed);
    this.ingress = this.ingress.filter((m) => !passedIds.has(m.messageId));
    const claimedIds = new Set(claimed);
    for (const id of claimed) this.loggedBelow.delete(id);
    const kept = this.queue.filter((m) => !claimedIds.has(m.messageId));
    // A closeTurn that ran beside this append may have handed back the log's queue with them in it already.
    const queued = new Set(kept.map((m) => m.messageId));
    const joined = passed.filter((m) => !claimedIds.has(m.messageId) && !queued.has(m.messageId));
    if (head !== undefined) for (const m of joined) this.loggedBelow.set(m.messageId, head);
    this.queue = [...kept, ...joined.map(toQueuedRef)];
  }

  /** What a step would claim: the first next-turn message on a turn's first step, then every next-step one. */
  claimFor(step: number): string[] {
    const all = this.waiting();
    const first = step === 1 ? all.find((m) => m.target === 'next-turn') : undefined;
    return [
      ...(first ? [first.messageId] : []),
      ...all.filter((m) => m.target === 'next-step').map((m) => m.messageId),
    ];
  }

  /** Claims for the model step about to run; `accept` counts no message of it as ahead any more. */
  claimInFlight(step: number): string[] {
    const claim = this.claimFor(step);
    this.inFlightClaim = new Set(claim);
    this.claimedInTurn(claim);
    return claim;
  }

  /** Ids a step (or a refused turn) of the running turn claims: they land in it unless they wait again at its end. */
  claimedInTurn(messageIds: readonly string[]): void {
    for (const id of messageIds) this.turnClaims.add(id);
  }

  /**
   * The running turn `turn` ended: what it claimed and what no longer waits (a step logged it, or its end took
   * it) landed in it. What waits again (a claim the interrupted step never logged) lands in a later turn.
   */
  landTurn(turn: number): void {
    for (const id of this.turnClaims) {
      if (this.status(id).state !== 'handled') continue;
      this.landed.delete(id);
      this.landed.set(id, turn);
      if (this.landed.size > LANDED_TURNS_KEPT) this.landed.delete(this.landed.keys().next().value ?? '');
    }
    this.turnClaims.clear();
  }

  /**
   * The turn `messageId` landed in: remembered, or `runningTurn` when a step of the running turn logged it
   * already. Undefined while it waits or is claimed by the step in flight (an interrupt may hand it back).
   */
  landedTurn(messageId: string, runningTurn: number): number | undefined {
    const landed = this.landed.get(messageId);
    if (landed !== undefined) return landed;
    return this.turnClaims.has(messageId) && this.status(messageId).state === 'handled' ? runningTurn : undefined;
  }

  /** True when `messageId` left the queue unclaimed (discarded at close). */
  wasDiscarded(messageId: string): boolean {
    return this.discarded.has(messageId);
  }

  /** The step in flight is over: its claim was absorbed, dropped (a compaction first), or ends with the turn. */
  settleInFlight(): void {
    this.inFlightClaim = new Set();
  }

  /**
   * The queue as the log has it below `head` (openSession, closeTurn): the store is the authority. Two
   * orders of a concurrent appendInbox that ran while closeTurn did:
   * - it logged a message before closeTurn read the log, and its outcome is not absorbed yet: the message is
   *   in this queue and still in the ingress, and it waits (is counted and claimed) once, as queued;
   * - it logged a message after closeTurn read the log, and its outcome was absorbed first: the message is
   *   queued here, above `head`, and this queue cannot know it, so it stays queued.
   * Without `head` (a session just opened, nothing in flight) the queue is taken as it is.
   */
  replaceQueue(queue: readonly QueuedRef[], head?: number): void {
    const listed = new Set(queue.map((m) => m.messageId));
    const later =
      head === undefined
        ? []
        : this.queue.filter((m) => !listed.has(m.messageId) && (this.loggedBelow.get(m.messageId) ?? 0) > head);
    this.queue = [...queue, ...later];
    const queued = new Set(this.queue.map((m) => m.messageId));
    for (const id of this.loggedBelow.keys()) if (!queued.has(id)) this.loggedBelow.delete(id);
  }

  /** Messages a tool step queued (plugin notices), less those already queued. */
  enqueue(refs: readonly QueuedRef[]): void {
    this.queue.push(...refs.filter((m) => !this.queue.some((q) => q.messageId === m.messageId)));
  }

  hasWake(): boolean {
    return this.latched || this.waiting().some((m) => m.wakeup);
  }

  hasNextStep(): boolean {
    return this.waiting().some((m) => m.target === 'next-step');
  }

  /** A turn starts: the latched wake (a downgraded send) has done its job. */
  clearWakeLatch(): void {
    this.latched = false;
  }

  get wakeLatched(): boolean {
    return this.latched;
  }

  /** Messages accepted but not yet logged. */
  get notYetLogged(): number {
    return this.ingress.length;
  }

  /** Waiting messages per target, for the state query. */
  counts(): { nextTurn: number; nextStep: number; notYetLogged: number } {
    const all = this.waiting();
    return {
      nextTurn: all.filter((m) => m.target === 'next-turn').length,
      nextStep: all.filter((m) => m.target === 'next-step').length,
      notYetLogged: this.ingress.length,
    };
  }

  /** Ids of the logged messages still queued (what a close discards). */
  queuedIds(): string[] {
    return this.queue.map((m) => m.messageId);
  }

  /** Logged messages that left the queue unclaimed (an `inbox/discard`). */
  drop(messageIds: readonly string[]): void {
    const dropped = new Set(messageIds);
    this.queue = this.queue.filter((m) => !dropped.has(m.messageId));
    for (const id of messageIds) {
      this.loggedBelow.delete(id);
      this.discarded.add(id);
      if (this.discarded.size > DISCARDED_KEPT) this.discarded.delete(this.discarded.values().next().value ?? '');
    }
  }

  /**
   * What the workflow knows of a message now: accepted and not yet logged, queued, claimed by the step in
   * flight, or handled (logged earlier, its fate is in the log); unknown beyond the dedupe window.
   */
  status(messageId: string): Pick<MessageStatusView, 'state' | 'target'> {
    // Claimed first: the step in flight may be the very activity logging it.
    if (this.inFlightClaim.has(messageId)) return { state: 'claimed' };
    const arrived = this.ingress.find((m) => m.messageId === messageId);
    if (arrived) return { state: 'not-yet-logged', target: arrived.target };
    const queued = this.queue.find((m) => m.messageId === messageId);
    if (queued) return { state: 'queued', target: queued.target };
    return { state: this.seenIds.has(messageId) ? 'handled' : 'unknown' };
  }

  toCarry(): InboxCarry {
    return {
      queue: this.queue,
      ingress: this.ingress,
      wakeLatched: this.latched,
      recentMessageIds: this.recentIds,
      ...(this.landed.size > 0 ? { landedTurns: [...this.landed] } : {}),
    };
  }

  private waiting(): Array<QueuedRef | IngressMessage> {
    const queued = new Set(this.queue.map((m) => m.messageId));
    return [...this.queue, ...this.ingress.filter((m) => !queued.has(m.messageId))];
  }
}
