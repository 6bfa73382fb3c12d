// Which sessions of a store are subagents, and whose: read from each log's first event (its `session/start`
// records the delegation), so a tree of sessions can be drawn and checked from the store alone, offline.
import { delegationOf, type Delegation } from '../core/index.js';
import type { SessionStore } from './session-store.js';

/** Reads in flight at once (one first row each). */
const READ_CONCURRENCY = 8;

/**
 * The delegation of each of `sessionIds` that is a subagent (the others are absent from the map). A log
 * that cannot be read is left out too: the commands that draw a tree are not the ones that judge a log.
 */
export async function delegationsOf(
  store: SessionStore,
  sessionIds: readonly string[],
): Promise<Map<string, Delegation>> {
  const out = new Map<string, Delegation>();
  let next = 0;
  const work = async (): Promise<void> => {
    while (next < sessionIds.length) {
      const sessionId = sessionIds[next++];
      if (sessionId === undefined) return;
      const delegation = await store.read(sessionId, 0, 1).then(delegationOf, () => undefined);
      if (delegation !== undefined) out.set(sessionId, delegation);
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, sessionIds.length) }, work));
  return out;
}

/**
 * Every subagent in the store, by the parent its delegation names: one first row read per session, or only
 * per session whose id `candidate` accepts (a tree's, by `descendantIdPrefix`: ids are listed, not read).
 */
export async function childrenByParent(
  store: SessionStore,
  candidate: (sessionId: string) => boolean = () => true,
): Promise<Map<string, { readonly sessionId: string; readonly delegation: Delegation }[]>> {
  const sessions = await store.list();
  const delegations = await delegationsOf(store, sessions.map((s) => s.sessionId).filter(candidate));
  const out = new Map<string, { sessionId: string; delegation: Delegation }[]>();
  for (const [sessionId, delegation] of delegations) {
    const siblings = out.get(delegation.parentSessionId) ?? [];
    siblings.push({ sessionId, delegation });
    out.set(delegation.parentSessionId, siblings);
  }
  return out;
}
