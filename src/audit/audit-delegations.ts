// The links between a session and its subagents, checked from both sides: each delegation call's
// `tool/start.child` and `tool/result.child` agree, the child's log exists and its `session/start.delegation`
// names this session (for a fork's seed: the session that made the link) and this call, the outcome recorded
// in the parent is what the child's log adds up to, and every subagent in the store that names this session
// is linked from it.
import { delegationOf, delegationResult, usageTotal, type SessionEvent, type Usage } from '../core/index.js';
import type { Delegation } from '../core/delegation.js';
import type { SessionStore } from '../stores/session-store.js';
import { delegationLinks, type DelegationLink } from './delegation-links.js';

/** Subagents in the store by the parent their delegation names (see childrenByParent). */
export type ChildrenIndex = ReadonlyMap<
  string,
  readonly { readonly sessionId: string; readonly delegation: Delegation }[]
>;

export interface SubagentCheck {
  readonly callId: string;
  readonly turn: number;
  readonly step: number;
  readonly childSessionId: string;
  /** The link was copied into a fork's seed: the child belongs to `owner`, the fork's origin. */
  readonly inSeed: boolean;
  /** The session that started the child (this one, or for a seed link the origin that made it). */
  readonly owner: string;
  /** The outcome the parent recorded (`tool/result.child`); null when the call is open or ended without one. */
  readonly recorded: { readonly reason: string; readonly tokens: number } | null;
  /** The child's log is in the store. */
  readonly childLog: boolean;
  /** What is wrong with this link, one line each (also in the audit's failures). */
  readonly problems: readonly string[];
  /** What is worth knowing and not wrong (an open call, a child that was never started, …). */
  readonly notes: readonly string[];
}

export interface DelegationAudit {
  readonly checks: readonly SubagentCheck[];
  /** Link problems, including subagents in the store that name this session and are linked from nowhere. */
  readonly failures: readonly string[];
}

export async function auditDelegations(
  store: SessionStore,
  sessionId: string,
  events: readonly SessionEvent[],
  index: ChildrenIndex,
): Promise<DelegationAudit> {
  const links = delegationLinks(events);
  const checks: SubagentCheck[] = [];
  const failures: string[] = [];
  const linkedFrom = new Map<string, string[]>();
  for (const link of links) {
    const check = await checkLink(store, sessionId, events, link);
    checks.push(check);
    failures.push(...check.problems.map((p) => `${where(link)}: ${p}`));
    if (check.childSessionId !== '') {
      linkedFrom.set(check.childSessionId, [...(linkedFrom.get(check.childSessionId) ?? []), where(link)]);
    }
  }
  for (const [child, calls] of linkedFrom) {
    if (calls.length > 1) failures.push(`subagent ${child} is linked from ${calls.length} calls: ${calls.join('; ')}`);
  }
  for (const child of index.get(sessionId) ?? []) {
    if (linkedFrom.has(child.sessionId)) continue;
    failures.push(
      `subagent ${child.sessionId}: its session/start.delegation names this session's call "${child.delegation.callId}", ` +
        'but no tool/start or tool/result of this session names it',
    );
  }
  return { checks, failures };
}

async function checkLink(
  store: SessionStore,
  sessionId: string,
  events: readonly SessionEvent[],
  link: DelegationLink,
): Promise<SubagentCheck> {
  const problems: string[] = [];
  const notes: string[] = [];
  const { started, result } = link;
  const recordedOutcome = result?.child ?? null;
  if (started === null) {
    problems.push(
      `its tool/result (seq ${result?.seq ?? '?'}) names subagent ${recordedOutcome?.sessionId ?? '?'}, but no tool/start of the call names a child`,
    );
  } else if (recordedOutcome !== null && recordedOutcome.sessionId !== started.childSessionId) {
    problems.push(
      `its tool/start (seq ${started.seq}) names subagent ${started.childSessionId}, ` +
        `its tool/result (seq ${result?.seq ?? '?'}) names ${recordedOutcome.sessionId}`,
    );
  }
  const child = started?.childSessionId ?? recordedOutcome?.sessionId ?? '';
  const owner = await linkOwner(store, sessionId, events, started?.seq ?? result?.seq ?? 0);
  const base = {
    callId: link.callId,
    turn: link.turn,
    step: link.step,
    childSessionId: child,
    inSeed: link.inSeed,
    owner: owner.sessionId,
    recorded: recordedOutcome ? { reason: recordedOutcome.reason, tokens: usageTotal(recordedOutcome.usage) } : null,
  };

  let childEvents: SessionEvent[];
  try {
    childEvents = await store.read(child);
  } catch (error) {
    if (!isCode(error, 'SESSION_NOT_FOUND')) {
      problems.push(`subagent ${child}'s log does not load: ${messageOf(error)}`);
    } else if (recordedOutcome !== null) {
      problems.push(
        `subagent ${child}'s log is not in the store, but the tool/result (seq ${result?.seq ?? '?'}) records its outcome`,
      );
    } else if (result === null) {
      notes.push(`the call is open (running now, or its run stopped mid-call) and subagent ${child} has no log`);
    } else {
      notes.push(`the call ended ${result.status} before subagent ${child} was started (it has no log)`);
    }
    return { ...base, childLog: false, problems, notes };
  }

  const delegation = delegationOf(childEvents);
  const from = `its tool/start (seq ${started?.seq ?? '?'})`;
  if (delegation === undefined) {
    problems.push(`subagent ${child}'s session/start records no delegation (it is no subagent), but ${from} names it`);
  } else {
    const seed = owner.sessionId !== sessionId ? ' (the link is in the fork seed: the origin made it)' : '';
    if (delegation.parentSessionId !== owner.sessionId) {
      problems.push(
        `subagent ${child}'s session/start.delegation names parent "${delegation.parentSessionId}", not "${owner.sessionId}"${seed}`,
      );
    }
    if (delegation.callId !== link.callId) {
      problems.push(
        `subagent ${child}'s session/start.delegation names call "${delegation.callId}", but it is linked from call "${link.callId}"`,
      );
    }
    if (owner.delegation !== null) {
      const depth = (owner.delegation?.depth ?? 0) + 1;
      const workspace = owner.delegation?.workspaceSessionId ?? owner.sessionId;
      if (delegation.depth !== depth) {
        problems.push(`subagent ${child}'s session/start.delegation has depth ${delegation.depth}, expected ${depth}`);
      }
      if (delegation.workspaceSessionId !== workspace) {
        problems.push(
          `subagent ${child}'s session/start.delegation shares workspace "${delegation.workspaceSessionId}", expected "${workspace}"`,
        );
      }
    }
  }

  if (recordedOutcome !== null) {
    const actual = delegationResult(child, childEvents).child;
    if (actual.reason !== recordedOutcome.reason || !sameUsage(actual.usage, recordedOutcome.usage)) {
      const upTo = matchingPrefix(child, childEvents, recordedOutcome);
      if (upTo !== null) {
        notes.push(
          `subagent ${child}'s log went on after its outcome was recorded (the record matches its log up to seq ${upTo})`,
        );
      } else {
        problems.push(
          `the tool/result (seq ${result?.seq ?? '?'}) records subagent ${child} as ${outcomeText(recordedOutcome)}; ` +
            `its log adds up to ${outcomeText(actual)}`,
        );
      }
    }
  } else if (result === null) {
    notes.push(`the call is open: subagent ${child} has not reported (running now, or the run stopped mid-call)`);
  } else {
    notes.push(`the call ended ${result.status} before subagent ${child} reported: no outcome or usage is recorded`);
  }
  return { ...base, childLog: true, problems, notes };
}

/** How a subagent audited on its own is linked from its parent: its parent's log names it from the call its delegation names. */
export interface ParentLink {
  readonly parentSessionId: string;
  readonly callId: string;
  /** `no-parent-log`: the parent is not in this store (a subagent imported alone): nothing to check. */
  readonly status: 'ok' | 'no-parent-log' | 'broken';
  readonly problem: string | null;
}

export async function auditParentLink(
  store: SessionStore,
  sessionId: string,
  delegation: Delegation,
): Promise<ParentLink> {
  const { parentSessionId, callId } = delegation;
  const base = { parentSessionId, callId };
  let parentEvents: SessionEvent[];
  try {
    parentEvents = await store.read(parentSessionId);
  } catch (error) {
    if (isCode(error, 'SESSION_NOT_FOUND')) return { ...base, status: 'no-parent-log', problem: null };
    return { ...base, status: 'broken', problem: `parent ${parentSessionId}'s log does not load: ${messageOf(error)}` };
  }
  const links = delegationLinks(parentEvents).filter(
    (l) => (l.started?.childSessionId ?? l.result?.child?.sessionId) === sessionId,
  );
  if (links.some((l) => l.callId === callId)) return { ...base, status: 'ok', problem: null };
  const others = links.map((l) => `call "${l.callId}" at ${l.turn}.${l.step}`).join(', ');
  return {
    ...base,
    status: 'broken',
    problem:
      `parent link: session/start.delegation names ${parentSessionId}'s call "${callId}", but ` +
      (others === '' ? `${parentSessionId}'s log names this session from no call` : `its log names it from ${others}`),
  };
}

/**
 * The session that made the link at `seq`: this one, or for a seq inside a fork's seed the origin (followed
 * through forks of forks as far as the store has them), with that session's own delegation (null: unknown).
 */
async function linkOwner(
  store: SessionStore,
  sessionId: string,
  events: readonly SessionEvent[],
  seq: number,
): Promise<{ sessionId: string; delegation: Delegation | undefined | null }> {
  let owner = sessionId;
  let start: SessionEvent | undefined = events[0];
  for (let hops = 0; hops < 64; hops++) {
    if (start?.type !== 'session/start' || start.parent === undefined || seq >= start.parent.seedLength) break;
    owner = start.parent.sessionId;
    start = (await store.read(owner, 0, 1).catch(() => []))[0];
  }
  return { sessionId: owner, delegation: start?.type === 'session/start' ? start.delegation : null };
}

/** The last seq of the shortest prefix of the child's log that adds up to the recorded outcome, or null. */
function matchingPrefix(
  child: string,
  events: readonly SessionEvent[],
  recorded: { readonly reason: string; readonly usage: Usage },
): number | null {
  for (let end = 1; end < events.length; end++) {
    const outcome = delegationResult(child, events.slice(0, end)).child;
    if (outcome.reason === recorded.reason && sameUsage(outcome.usage, recorded.usage)) return end - 1;
  }
  return null;
}

function where(link: DelegationLink): string {
  return `delegation call ${link.callId} at ${link.turn}.${link.step}${link.inSeed ? ' (in the seed)' : ''}`;
}

function outcomeText(outcome: { readonly reason: string; readonly usage: Usage }): string {
  const u = outcome.usage;
  return (
    `${outcome.reason}, ${usageTotal(u)} tokens ` +
    `(in ${u.inputUncached} + ${u.cacheRead} cached, out ${u.output} + ${u.reasoning} reasoning)`
  );
}

function sameUsage(a: Usage, b: Usage): boolean {
  return (
    a.inputUncached === b.inputUncached &&
    a.cacheRead === b.cacheRead &&
    a.output === b.output &&
    a.reasoning === b.reasoning
  );
}

function isCode(error: unknown, code: string): boolean {
  return error !== null && typeof error === 'object' && 'code' in error && error.code === code;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
