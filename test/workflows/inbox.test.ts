// The session inbox without a server: receipts and positions, the dedupe window, the downgrade of a send
// aimed at a dying turn, claims (and the claim in flight), absorbing an append's outcome, the turn each
// message landed in, the carry.
import { describe, expect, it } from 'vitest';
import type { InboxTarget } from '../../src/core/index.js';
import { RECENT_MESSAGE_IDS } from '../../src/shared/activity-contracts.js';
import { Inbox, LANDED_TURNS_KEPT } from '../../src/workflows/inbox.js';

const at = () => 1_000;
const followup = (inbox: Inbox, messageId: string, dying = false) =>
  inbox.accept({ messageId, content: messageId }, 'next-turn', true, 'followup', dying, at);
const steer = (inbox: Inbox, messageId: string, dying = false) =>
  inbox.accept({ messageId, content: messageId }, 'next-step', true, 'steer', dying, at);
const inject = (inbox: Inbox, messageId: string, dying = false) =>
  inbox.accept({ messageId, content: messageId, source: 'ci' }, 'next-step', false, 'inject', dying, at);
const ids = (messages: readonly { messageId: string }[]) => messages.map((m) => m.messageId);
/** Runs one append activity the way the workflow does: pass the ingress, then absorb it. */
const logAll = (inbox: Inbox, claimed: readonly string[] = []) => inbox.absorb(inbox.pass(), claimed);

describe('Inbox', () => {
  it('accepts into the ingress with the time of arrival; each receipt counts what waits ahead in its queue', () => {
    const inbox = new Inbox();
    expect(followup(inbox, 'f1')).toEqual({
      messageId: 'f1',
      position: 0,
      target: 'next-turn',
      duplicate: false,
      downgraded: false,
    });
    expect(steer(inbox, 's1').position).toBe(0);
    logAll(inbox);
    expect(followup(inbox, 'f2').position).toBe(1);
    expect(inject(inbox, 'i1').position).toBe(1);
    expect(inbox.pass()).toEqual([
      {
        messageId: 'f2',
        target: 'next-turn',
        wakeup: true,
        origin: 'followup',
        content: 'f2',
        downgraded: false,
        at: 1_000,
      },
      {
        messageId: 'i1',
        target: 'next-step',
        wakeup: false,
        origin: 'inject',
        source: 'ci',
        content: 'i1',
        downgraded: false,
        at: 1_000,
      },
    ]);
    expect(inbox.counts()).toEqual({ nextTurn: 2, nextStep: 2, notYetLogged: 2 });
  });

  it('refuses a message id it has seen as a duplicate, without asking the time or queueing it', () => {
    const inbox = new Inbox();
    followup(inbox, 'm');
    const receipt = inbox.accept({ messageId: 'm', content: 'again' }, 'next-step', false, 'inject', false, () => {
      throw new Error('a duplicate needs no time');
    });
    expect(receipt).toEqual({ messageId: 'm', position: -1, target: 'next-step', duplicate: true, downgraded: false });
    expect(inbox.notYetLogged).toBe(1);
  });

  it('remembers the last RECENT_MESSAGE_IDS ids only (the store is the authority beyond them)', () => {
    const inbox = new Inbox();
    inbox.remember('oldest');
    for (let i = 0; i < RECENT_MESSAGE_IDS - 1; i++) inbox.remember(`r${i}`);
    expect(followup(inbox, 'oldest').duplicate).toBe(true);
    inbox.remember('one-more');
    expect(inbox.toCarry().recentMessageIds).toHaveLength(RECENT_MESSAGE_IDS);
    expect(followup(inbox, 'oldest').duplicate).toBe(false);
    expect(followup(inbox, 'r1').duplicate).toBe(true);
  });

  it('downgrades a waking next-step send aimed at a dying turn to the next turn, and latches the wake', () => {
    const inbox = new Inbox();
    expect(inject(inbox, 'i', true)).toMatchObject({ target: 'next-step', downgraded: false });
    expect(followup(inbox, 'f', true)).toMatchObject({ target: 'next-turn', downgraded: false });
    expect(inbox.wakeLatched).toBe(false);
    expect(steer(inbox, 's', true)).toMatchObject({ target: 'next-turn', downgraded: true, position: 1 });
    expect(inbox.wakeLatched).toBe(true);
    const handed = inbox.pass();
    expect(handed.find((m) => m.messageId === 's')).toMatchObject({ origin: 'steer', downgraded: true });
    inbox.release(handed);
    logAll(inbox);
    expect(inbox.toCarry().queue.find((m) => m.messageId === 's')).toEqual({
      messageId: 's',
      target: 'next-turn',
      wakeup: true,
      downgraded: true,
    });
    // The latch holds the wake even when nothing waking waits any more, until a turn starts.
    inbox.replaceQueue([]);
    expect(inbox.hasWake()).toBe(true);
    inbox.clearWakeLatch();
    expect(inbox.hasWake()).toBe(false);
  });

  it('wakes for a waking message, logged or not, never for an inject alone', () => {
    const inbox = new Inbox();
    inject(inbox, 'i');
    expect(inbox.hasWake()).toBe(false);
    expect(inbox.hasNextStep()).toBe(true);
    steer(inbox, 's');
    expect(inbox.hasWake()).toBe(true);
    logAll(inbox);
    expect(inbox.hasWake()).toBe(true);
    expect(inbox.notYetLogged).toBe(0);
  });

  it("claims the first next-turn message on a turn's first step, then every next-step message, in order", () => {
    const inbox = new Inbox();
    steer(inbox, 's1');
    followup(inbox, 'f1');
    logAll(inbox);
    followup(inbox, 'f2');
    inject(inbox, 'i1');
    expect(inbox.claimFor(1)).toEqual(['f1', 's1', 'i1']);
    expect(inbox.claimFor(2)).toEqual(['s1', 'i1']);
    // Selecting is not claiming: nothing left the inbox.
    expect(inbox.counts()).toEqual({ nextTurn: 2, nextStep: 2, notYetLogged: 2 });
  });

  it('absorbs an outcome: the passed messages move to the queue less the claim; later arrivals stay in the ingress', () => {
    const inbox = new Inbox();
    followup(inbox, 'f1');
    logAll(inbox);
    inject(inbox, 'i1');
    const claim = inbox.claimInFlight(1);
    const passed = inbox.pass();
    steer(inbox, 's1'); // arrives while the step runs
    inbox.absorb(passed, claim);
    inbox.settleInFlight();
    expect(claim).toEqual(['f1', 'i1']);
    expect(inbox.toCarry().queue).toEqual([]);
    expect(ids(inbox.toCarry().ingress)).toEqual(['s1']);
    logAll(inbox);
    expect(inbox.toCarry().queue).toEqual([{ messageId: 's1', target: 'next-step', wakeup: true, downgraded: false }]);
  });

  it('hands each accepted message to one append activity at a time: released ones are handed again', () => {
    const inbox = new Inbox();
    steer(inbox, 's1');
    const toStep = inbox.pass(); // the step's activity
    steer(inbox, 's2'); // arrives while it runs
    expect(inbox.unpassed).toBe(1);
    const toLogger = inbox.pass(); // the concurrent appendInbox
    expect(ids(toStep)).toEqual(['s1']);
    expect(ids(toLogger)).toEqual(['s2']);
    expect(inbox.pass()).toEqual([]);
    expect(inbox.unpassed).toBe(0);
    inbox.release(toLogger); // it failed: the next call is handed s2 again
    expect(inbox.unpassed).toBe(1);
    inbox.absorb(toStep);
    expect(ids(inbox.pass())).toEqual(['s2']);
    expect(inbox.counts()).toEqual({ nextTurn: 0, nextStep: 2, notYetLogged: 1 });
  });

  it('counts nothing the step in flight claimed as ahead of a new message, until that step settles', () => {
    const inbox = new Inbox();
    followup(inbox, 'f1');
    followup(inbox, 'f2');
    steer(inbox, 's1');
    logAll(inbox);
    inbox.claimInFlight(1); // f1 and s1
    expect(followup(inbox, 'f3').position).toBe(1); // f2 only
    expect(steer(inbox, 's2').position).toBe(0);
    inbox.settleInFlight();
    expect(followup(inbox, 'f4').position).toBe(3);
    // claimFor only selects: it leaves the claim in flight as it is.
    inbox.claimInFlight(2);
    inbox.claimFor(1);
    expect(steer(inbox, 's3').position).toBe(0);
  });

  it('takes the queue from the log as it stands, and a tool step’s notices less the ones already queued', () => {
    const inbox = new Inbox();
    const ref = (messageId: string, target: InboxTarget = 'next-step') => ({
      messageId,
      target,
      wakeup: false,
      downgraded: false,
    });
    inbox.replaceQueue([ref('a'), ref('b', 'next-turn')]);
    inbox.enqueue([ref('b'), ref('c')]);
    expect(ids(inbox.toCarry().queue)).toEqual(['a', 'b', 'c']);
    expect(inbox.counts()).toEqual({ nextTurn: 1, nextStep: 2, notYetLogged: 0 });
  });

  it('claims once a message closeTurn handed back as queued while the appendInbox that logged it was in flight', () => {
    // Seen in a chaos trial (two workers on PostgreSQL): s1 arrived while closeTurn ran, the concurrent
    // appendInbox logged it before closeTurn read the queue, and the next turn's first claim named it twice.
    const inbox = new Inbox();
    steer(inbox, 's1');
    const toLogger = inbox.pass();
    inbox.replaceQueue([{ messageId: 's1', target: 'next-step', wakeup: true, downgraded: false }]);
    expect(inbox.claimFor(1)).toEqual(['s1']);
    expect(inbox.counts()).toMatchObject({ nextStep: 1 });
    inbox.absorb(toLogger);
    expect(ids(inbox.toCarry().queue)).toEqual(['s1']);
    expect(ids(inbox.toCarry().ingress)).toEqual([]);
    expect(inbox.claimFor(2)).toEqual(['s1']);
  });

  it('keeps queued a message the concurrent appendInbox logged after closeTurn read the log, its outcome absorbed first', () => {
    // The mirror order of the race above: closeTurn read the log at head 10 (its queue lists f1 only); s1
    // arrived and appendInbox logged it at seq 10 (head 11) and returned before closeTurn did.
    const inbox = new Inbox();
    followup(inbox, 'f1');
    inbox.absorb(inbox.pass(), [], 9);
    steer(inbox, 's1');
    inbox.absorb(inbox.pass(), [], 11);
    const f1 = { messageId: 'f1', target: 'next-turn' as const, wakeup: true, downgraded: false };
    inbox.replaceQueue([f1], 10);
    expect(ids(inbox.toCarry().queue)).toEqual(['f1', 's1']);
    expect(inbox.hasWake()).toBe(true);
    expect(inbox.claimFor(1)).toEqual(['f1', 's1']);
  });

  it("takes closeTurn's queue as the truth for everything logged below its head", () => {
    // Both were logged before closeTurn read the log; closeTurn's queue no longer lists s1 (a refused turn's
    // claim took it), so it leaves the workflow's queue too.
    const inbox = new Inbox();
    followup(inbox, 'f1');
    steer(inbox, 's1');
    inbox.absorb(inbox.pass(), [], 8);
    inbox.replaceQueue([{ messageId: 'f1', target: 'next-turn', wakeup: true, downgraded: false }], 12);
    expect(ids(inbox.toCarry().queue)).toEqual(['f1']);
    // Without a head (a session just opened) the queue is taken as it is.
    steer(inbox, 's2');
    inbox.absorb(inbox.pass(), [], 20);
    inbox.replaceQueue([]);
    expect(ids(inbox.toCarry().queue)).toEqual([]);
  });

  it('hands everything to a continued run: queue, ingress, wake latch and the dedupe window', () => {
    const inbox = new Inbox();
    followup(inbox, 'f1');
    logAll(inbox);
    steer(inbox, 's1', true);
    inject(inbox, 'i1');
    const next = new Inbox(structuredClone(inbox.toCarry()));
    expect(next.toCarry()).toEqual(inbox.toCarry());
    expect(next.wakeLatched).toBe(true);
    expect(followup(next, 's1').duplicate).toBe(true);
    expect(next.claimFor(1)).toEqual(inbox.claimFor(1));
    expect(followup(next, 'f2').position).toBe(2);
  });

  describe('the turn a message landed in', () => {
    it('is the running turn once a step of it logged the message, and stays that turn after it', () => {
      const inbox = new Inbox();
      followup(inbox, 'f1');
      followup(inbox, 'f2');
      logAll(inbox);
      const claim = inbox.claimInFlight(1);
      expect(claim).toEqual(['f1']);
      // In flight: an interrupt may hand it back, so no turn yet.
      expect(inbox.landedTurn('f1', 3)).toBeUndefined();
      steer(inbox, 's1');
      inbox.absorb(inbox.pass(), claim);
      inbox.settleInFlight();
      expect(inbox.landedTurn('f1', 3)).toBe(3);
      expect(inbox.landedTurn('s1', 3)).toBeUndefined();
      inbox.absorb(inbox.pass(), inbox.claimInFlight(2));
      inbox.settleInFlight();
      inbox.landTurn(3);
      // Remembered after the turn, whatever runs now; f2 still waits for a turn of its own.
      expect(inbox.landedTurn('f1', 4)).toBe(3);
      expect(inbox.landedTurn('s1', 4)).toBe(3);
      expect(inbox.landedTurn('f2', 4)).toBeUndefined();
      expect(inbox.status('f2').state).toBe('queued');
    });

    it("is a later turn for a claim the interrupted step never logged; the turn's end decides", () => {
      const inbox = new Inbox();
      steer(inbox, 's1');
      steer(inbox, 's2');
      logAll(inbox);
      inbox.claimInFlight(1); // s1 and s2; the step is interrupted before it logs them
      inbox.settleInFlight();
      // closeTurn's queue: the answer was logged with s1 before the interrupt, s2 waits again.
      inbox.replaceQueue([{ messageId: 's2', target: 'next-step', wakeup: true, downgraded: false }]);
      inbox.landTurn(5);
      expect(inbox.landedTurn('s1', 6)).toBe(5);
      expect(inbox.landedTurn('s2', 6)).toBeUndefined();
      inbox.absorb(inbox.pass(), inbox.claimInFlight(1));
      inbox.settleInFlight();
      inbox.landTurn(6);
      expect(inbox.landedTurn('s2', 7)).toBe(6);
    });

    it('counts a refused turn that took its batch, names a discard, and keeps the latest landings across runs', () => {
      const inbox = new Inbox();
      followup(inbox, 'f1');
      followup(inbox, 'f2');
      logAll(inbox);
      inbox.claimedInTurn(inbox.claimFor(1)); // a budget refusal claims the batch in closeTurn
      inbox.replaceQueue([{ messageId: 'f2', target: 'next-turn', wakeup: true, downgraded: false }]);
      inbox.landTurn(2);
      expect(inbox.landedTurn('f1', 2)).toBe(2);
      inbox.drop(['f2']);
      expect(inbox.status('f2').state).toBe('handled');
      expect(inbox.wasDiscarded('f2')).toBe(true);
      expect(inbox.landedTurn('f2', 2)).toBeUndefined();

      for (let i = 0; i < LANDED_TURNS_KEPT; i++) {
        followup(inbox, `m${i}`);
        logAll(inbox);
        inbox.absorb(inbox.pass(), inbox.claimInFlight(1));
        inbox.settleInFlight();
        inbox.landTurn(10 + i);
      }
      const next = new Inbox(structuredClone(inbox.toCarry()));
      expect(next.toCarry().landedTurns).toHaveLength(LANDED_TURNS_KEPT);
      expect(next.landedTurn('f1', 99)).toBeUndefined();
      expect(next.landedTurn('m0', 99)).toBe(10);
      expect(next.landedTurn(`m${LANDED_TURNS_KEPT - 1}`, 99)).toBe(10 + LANDED_TURNS_KEPT - 1);
    });
  });
});
