// The audit of a session's hash chain, offline: every link recomputes from its event and the one before, a fork's
// anchor is the parent's chain at the fork point, with DH_LOG_KEY every row's MAC verifies. Says what it cannot
// see (without a key: a full recompute, naming the key the rows' MACs are under; always: a cut tail).
import type { SessionEvent } from '../core/events.js';
import { AFTER_UNCHAINED, ROOT_ANCHOR, verifyChain, type ChainLink } from '../stores/log-chain.js';
import type { LogKey } from '../stores/log-key.js';
import { nativeEventDigest } from '../stores/native-sha256.js';
import type { SessionStore } from '../stores/session-store.js';

export interface ChainCheck {
  /** `ok`: nothing broke (see `unchained` and `limits` for what that covers); `broken`: see `broken`. */
  readonly status: 'ok' | 'broken';
  /** Rows checked. */
  readonly links: number;
  /** The key id every MAC was checked under; null without DH_LOG_KEY (MACs not checked). */
  readonly keyId: string | null;
  /** Leading rows written before the chain existed (not covered by it), inclusive. */
  readonly unchained: { readonly from: number; readonly to: number } | null;
  /** The first seq where the chain, a MAC or the fork anchor breaks, and why. */
  readonly broken: { readonly seq: number; readonly problem: string } | null;
  /** How the anchor was checked. */
  readonly anchor: 'root' | 'fork-parent-checked' | 'fork-parent-absent' | 'not-recorded';
  /** The last row's chain digest. */
  readonly head: string | null;
  /** What this check does not detect, one sentence each. */
  readonly limits: readonly string[];
}

export const NO_KEY_LIMIT =
  'without DH_LOG_KEY, a forger who rewrites rows and recomputes every digest and the whole chain is not ' +
  'detected (the history mirror still is, where the session has a workflow)';
export const TAIL_LIMIT = 'rows cut from the end of the log are detected only by the history mirror';

/** Without a key, on rows that carry MACs: which key would check them, so the reader knows what to set. */
export function uncheckedMacsLimit(keyIds: readonly string[]): string {
  const ids = keyIds.map((id) => `"${id}"`).join(', ');
  return `the rows carry MACs under key id ${ids}, unchecked: set DH_LOG_KEY to the key the workers write with to check them`;
}

/** Checks the chain of `events` (the whole log as `store.read` returned it) against what the store holds. */
export async function auditChain(
  store: SessionStore,
  sessionId: string,
  events: readonly SessionEvent[],
  key?: LogKey,
): Promise<ChainCheck> {
  const stored = await store.readChain(sessionId, 0, events.length);
  // From the events as loaded (their digests and times), with the chain and MAC columns as stored.
  const links: ChainLink[] = events.map((event, i) => ({
    seq: event.seq,
    at: event.at,
    digest: nativeEventDigest(event),
    chain: stored.links[i]?.chain ?? null,
    mac: stored.links[i]?.mac ?? null,
  }));
  const verdict = verifyChain({ anchor: stored.anchor, links }, key !== undefined ? { key } : {});
  let broken = verdict.broken;
  const anchorCheck = await checkAnchor(store, events[0], stored.anchor, verdict.unchained !== null);
  if (anchorCheck.problem !== null && (broken === null || broken.seq > 0))
    broken = { seq: 0, problem: anchorCheck.problem };
  // `<keyId>:<hex>`: the ids are public, so naming them tells the reader which key to fetch.
  const macKeyIds = [...new Set(links.flatMap((link) => (link.mac !== null ? [link.mac.split(':')[0] ?? ''] : [])))];
  const limits = [
    ...(key === undefined ? [NO_KEY_LIMIT] : []),
    ...(key === undefined && macKeyIds.length > 0 ? [uncheckedMacsLimit(macKeyIds)] : []),
    TAIL_LIMIT,
  ];
  if (anchorCheck.result === 'fork-parent-absent') {
    limits.push('the fork anchor is not checked: the parent session is not in this store');
  }
  return {
    status: broken === null ? 'ok' : 'broken',
    links: links.length,
    keyId: key?.keyId ?? null,
    unchained: verdict.unchained,
    broken,
    anchor: anchorCheck.result,
    head: verdict.head,
    limits,
  };
}

/**
 * A root's anchor must be ROOT_ANCHOR; a fork's, the parent's chain digest at its row `seedLength - 1`
 * (AFTER_UNCHAINED when that row predates the chain), checked when the parent is in the store.
 */
async function checkAnchor(
  store: SessionStore,
  start: SessionEvent | undefined,
  anchor: string | null,
  unchained: boolean,
): Promise<{ result: ChainCheck['anchor']; problem: string | null }> {
  // A session created before the chain has no anchor; its leading rows are reported as unchained.
  if (anchor === null || unchained) return { result: 'not-recorded', problem: null };
  const parent = start?.type === 'session/start' ? start.parent : undefined;
  if (parent === undefined) {
    return {
      result: 'root',
      problem:
        anchor === ROOT_ANCHOR
          ? null
          : `the chain anchor ${anchor} of a session that is not a fork is not the root anchor`,
    };
  }
  const atSeq = parent.seedLength - 1;
  let parentChain;
  try {
    parentChain = await store.readChain(parent.sessionId, atSeq, atSeq + 1);
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === 'SESSION_NOT_FOUND') {
      return { result: 'fork-parent-absent', problem: null };
    }
    throw error;
  }
  const link = parentChain.links[0];
  if (link === undefined) {
    return {
      result: 'fork-parent-checked',
      problem: `the fork point is seq ${atSeq} of parent "${parent.sessionId}", which has no such row`,
    };
  }
  const expected = link.chain ?? AFTER_UNCHAINED;
  return {
    result: 'fork-parent-checked',
    problem:
      anchor === expected
        ? null
        : `the fork's chain anchor ${anchor} is not the chain digest of parent "${parent.sessionId}" at seq ${atSeq} (${expected})`,
  };
}
