// Property tests of the inbox: whatever the interleaving of accepts, append activities (pass, then absorb)
// and model steps (claim, pass, absorb the claim), every accepted id is claimed exactly once, each queue
// in the order it was accepted, and a receipt's position counts exactly the messages claimed before it.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { InboxTarget } from '../../src/core/index.js';
import type { IngressMessage } from '../../src/shared/activity-contracts.js';
import type { SendReceipt } from '../../src/shared/session-messages.js';
import { Inbox } from '../../src/workflows/inbox.js';

type Command =
  | { kind: 'accept'; id: string; target: InboxTarget; wakeup: boolean; dying: boolean }
  /** An activity starts (it is handed the ingress); a model step claims first. One runs at a time. */
  | { kind: 'start'; activity: 'append' | 'step'; step: 1 | 2 }
  /** The activity in flight ends; a step that asked for a compaction first claimed nothing. */
  | { kind: 'finish'; compacted: boolean };

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('accept' as const),
      // A small pool, so that ids repeat: a repeat is a duplicate, never a second claim.
      id: fc.integer({ min: 0, max: 30 }).map((n) => `m${n}`),
      target: fc.constantFrom<InboxTarget>('next-turn', 'next-step'),
      wakeup: fc.boolean(),
      dying: fc.boolean(),
    }),
    weight: 3,
  },
  fc.record({
    kind: fc.constant('start' as const),
    activity: fc.constantFrom('append' as const, 'step' as const),
    step: fc.constantFrom(1 as const, 2 as const),
  }),
  fc.record({ kind: fc.constant('finish' as const), compacted: fc.boolean() }),
);

interface Accepted {
  readonly receipt: SendReceipt;
  /** How many claims had been selected when it arrived. */
  readonly selectionsBefore: number;
}
interface Claimed {
  readonly id: string;
  /** Which selection claimed it. */
  readonly selection: number;
}

/** Runs the commands, then drains the inbox with first steps until nothing waits. */
function run(commands: readonly Command[]): { accepted: Accepted[]; duplicates: SendReceipt[]; claimed: Claimed[] } {
  const inbox = new Inbox();
  const accepted: Accepted[] = [];
  const duplicates: SendReceipt[] = [];
  const claimed: Claimed[] = [];
  let selections = 0;
  let inFlight: { passed: readonly IngressMessage[]; claim: readonly string[] } | null = null;
  const start = (activity: 'append' | 'step', step: number) => {
    const claim = activity === 'step' ? inbox.claimInFlight(step) : [];
    if (activity === 'step') selections++;
    inFlight = { passed: inbox.pass(), claim };
  };
  const finish = (compacted: boolean) => {
    if (!inFlight) return;
    const claim = compacted ? [] : inFlight.claim;
    inbox.absorb(inFlight.passed, claim);
    inbox.settleInFlight();
    claimed.push(...claim.map((id) => ({ id, selection: selections })));
    inFlight = null;
  };
  for (const c of commands) {
    if (c.kind === 'accept') {
      const receipt = inbox.accept({ messageId: c.id, content: c.id }, c.target, c.wakeup, 'steer', c.dying, () => 0);
      if (receipt.duplicate) duplicates.push(receipt);
      else accepted.push({ receipt, selectionsBefore: selections });
    } else if (c.kind === 'start') {
      if (!inFlight) start(c.activity, c.step);
    } else {
      finish(c.compacted);
    }
  }
  finish(false);
  for (let guard = 0; inbox.claimFor(1).length > 0; guard++) {
    if (guard > commands.length + 1) throw new Error('the inbox does not drain');
    start('step', 1);
    finish(false);
  }
  expect(inbox.toCarry().queue).toEqual([]);
  expect(inbox.toCarry().ingress).toEqual([]);
  return { accepted, duplicates, claimed };
}

const ofTarget = (accepted: readonly Accepted[], target: InboxTarget) =>
  accepted.filter((a) => a.receipt.target === target).map((a) => a.receipt.messageId);

describe('inbox (pure, any interleaving)', () => {
  it('claims every accepted id exactly once, each queue in accept order', () => {
    fc.assert(
      fc.property(fc.array(command, { maxLength: 120 }), (commands) => {
        const { accepted, duplicates, claimed } = run(commands);
        const claimedIds = claimed.map((c) => c.id);
        expect(new Set(claimedIds).size).toBe(claimedIds.length);
        expect([...claimedIds].sort()).toEqual(accepted.map((a) => a.receipt.messageId).sort());
        const acceptedIds = new Set(accepted.map((a) => a.receipt.messageId));
        for (const target of ['next-turn', 'next-step'] as const) {
          const inTarget = new Set(ofTarget(accepted, target));
          expect(claimedIds.filter((id) => inTarget.has(id))).toEqual(ofTarget(accepted, target));
        }
        // Within the window every repeat is known, so a duplicate receipt never names an unseen id.
        for (const d of duplicates) expect(acceptedIds.has(d.messageId)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('gives each message the position it is claimed at: the same-queue messages claimed before it, unclaimed when it came', () => {
    // Only steps that keep their claim: a step that compacts first drops a claim `accept` already
    // counted as gone, and positions are an estimate in that case (the step claims again at once).
    const keepsClaims = fc
      .array(command, { maxLength: 120 })
      .map((commands) => commands.map((c): Command => (c.kind === 'finish' ? { ...c, compacted: false } : c)));
    fc.assert(
      fc.property(keepsClaims, (commands) => {
        const { accepted, claimed } = run(commands);
        const targetOf = new Map(accepted.map((a) => [a.receipt.messageId, a.receipt.target]));
        for (const { receipt, selectionsBefore } of accepted) {
          const index = claimed.findIndex((c) => c.id === receipt.messageId);
          const ahead = claimed
            .slice(0, index)
            .filter((c) => targetOf.get(c.id) === receipt.target && c.selection > selectionsBefore);
          expect(receipt.position, receipt.messageId).toBe(ahead.length);
        }
      }),
      { numRuns: 500 },
    );
  });
});
