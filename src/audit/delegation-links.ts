// A log's links to its subagents, from the log alone: each delegation call's `tool/start.child` (the child it
// started) paired with its `tool/result` (and the outcome that carries, `tool/result.child`), in log order.
import type { EventOf, SessionEvent } from '../core/index.js';

export interface DelegationLink {
  readonly callId: string;
  readonly turn: number;
  readonly step: number;
  /** The child its `tool/start` names; null when only its result names one (a broken link). */
  readonly started: { readonly seq: number; readonly childSessionId: string } | null;
  /** Its `tool/result`; null while the call is open (running, or its run stopped mid-call). */
  readonly result: {
    readonly seq: number;
    readonly status: EventOf<'tool/result'>['status'];
    /** The outcome it records; null when the call ended before its child reported (interrupted, repaired). */
    readonly child: NonNullable<EventOf<'tool/result'>['child']> | null;
  } | null;
  /** The link is in a fork's seed (copied from the fork's origin, which started the child). */
  readonly inSeed: boolean;
}

/**
 * Every delegation call that names a child, on either side. A call the activity refused names none (no
 * `tool/start`, a result without `child`) and is not a link.
 */
export function delegationLinks(events: readonly SessionEvent[]): DelegationLink[] {
  const start = events[0];
  const seedLength = start?.type === 'session/start' ? (start.parent?.seedLength ?? 0) : 0;
  const links: DelegationLink[] = [];
  const open = new Map<string, number>();
  const slot = (e: { turn: number; step: number; callId: string }) => `${e.turn}.${e.step}:${e.callId}`;
  for (const e of events) {
    if (e.type === 'tool/start' && e.child !== undefined) {
      open.set(slot(e), links.length);
      links.push({
        callId: e.callId,
        turn: e.turn,
        step: e.step,
        started: { seq: e.seq, childSessionId: e.child },
        result: null,
        inSeed: e.seq < seedLength,
      });
    } else if (e.type === 'tool/result') {
      const index = open.get(slot(e));
      if (index === undefined && e.child === undefined) continue;
      const result = { seq: e.seq, status: e.status, child: e.child ?? null };
      if (index !== undefined) {
        open.delete(slot(e));
        const link = links[index];
        if (link) links[index] = { ...link, result };
      } else {
        links.push({ callId: e.callId, turn: e.turn, step: e.step, started: null, result, inSeed: e.seq < seedLength });
      }
    }
  }
  return links;
}

/** The child a link names: its start's, else its result's. */
export function linkedChild(link: DelegationLink): string {
  return link.started?.childSessionId ?? link.result?.child?.sessionId ?? '';
}
