// The session log's hash chain: each stored row links the previous row's chain digest to its own event digest
// and timestamp, so editing, deleting, inserting or reordering any row before the head breaks every later link.
// Computed by the store once, at insert; verified offline by the audit and by `dh import`.
import type { LogKey } from './log-key.js';
import { nativeSha256Digest } from './native-sha256.js';

export const CHAIN_FORMAT = 'dh-chain/1';
/** The anchor (the `prev` of seq 0) of a session that is not a fork. */
export const ROOT_ANCHOR = nativeSha256Digest(`${CHAIN_FORMAT} root`);
/**
 * The `prev` of the first chained row after rows written before the chain existed (and a fork's anchor when
 * the parent's row at the fork point is such a row): a fixed value, since there is no chain to link to.
 */
export const AFTER_UNCHAINED = nativeSha256Digest(`${CHAIN_FORMAT} after unchained prefix`);

/**
 * `sha256:<hex>` over the format tag, the previous link, the row's event digest (which covers seq, key, type
 * and body but not `at`) and its `at`: the link covers the whole stored event and everything before it.
 */
export function chainLink(prev: string, digest: string, at: number): string {
  return nativeSha256Digest(`${CHAIN_FORMAT}\n${prev}\n${digest}\n${at}`);
}

/**
 * The `prev` of the row at `head`: the session's anchor at seq 0 (a session created before the chain has
 * none and counts as a root), else the chain of row `head - 1`, or AFTER_UNCHAINED when that row has none.
 */
export function prevForHead(anchor: string | null, head: number, lastChain: string | null): string {
  if (head === 0) return anchor ?? ROOT_ANCHOR;
  return lastChain ?? AFTER_UNCHAINED;
}

/** A chain digest's form; `create` refuses an anchor of any other. */
export function assertChainDigest(name: string, value: string): void {
  if (typeof value !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(value)) {
    throw new TypeError(`${name} must be a chain digest (sha256:<64 hex digits>)`);
  }
}

/** One row of the chain: the event's digest and time, and what the store recorded for it. */
export interface ChainLink {
  readonly seq: number;
  readonly at: number;
  readonly digest: string;
  /** null on a row written before the chain existed. */
  readonly chain: string | null;
  /** `<keyId>:<hex>`, or null when the writing store had no key. */
  readonly mac: string | null;
}

/** A session's chain as stored: its anchor (null for a session created before the chain) and its rows. */
export interface StoredChain {
  readonly anchor: string | null;
  readonly links: readonly ChainLink[];
}

export interface ChainVerification {
  readonly ok: boolean;
  /** Rows checked. */
  readonly links: number;
  /** The leading rows that carry no chain (written before it existed), inclusive; null when there are none. */
  readonly unchained: { readonly from: number; readonly to: number } | null;
  /** The first row where the chain or a MAC breaks, and why. */
  readonly broken: { readonly seq: number; readonly problem: string } | null;
  /** Whether every row's MAC was checked against a key (and so whether a full recompute is detected). */
  readonly macs: 'verified' | 'not-checked';
  /** The last row's chain digest. */
  readonly head: string | null;
}

export const AUDIT_WITHOUT_KEY = 'audit without DH_LOG_KEY for a chain-only check';

/**
 * Recomputes every link of a whole log (`links[i].seq === i`) from its digest, time and the previous link,
 * and with a key checks each chained row's MAC. A run of unchained rows is allowed only as a prefix, and only
 * in a session created before the chain (no anchor); without a key such rows are reported, not failed.
 */
export function verifyChain(stored: StoredChain, options: { readonly key?: LogKey } = {}): ChainVerification {
  const { anchor, links } = stored;
  const key = options.key;
  let unchained: { from: number; to: number } | null = null;
  let previous: string | null = null;
  const result = (broken: ChainVerification['broken']): ChainVerification => ({
    ok: broken === null,
    links: links.length,
    unchained,
    broken,
    macs: key !== undefined ? 'verified' : 'not-checked',
    head: previous,
  });
  for (const [i, link] of links.entries()) {
    if (link.seq !== i)
      return result({ seq: i, problem: `row ${i} is missing (the next stored row is seq ${link.seq})` });
    if (link.chain === null) {
      if (previous !== null)
        return result({ seq: i, problem: 'the row has no chain digest, yet the rows before it are chained' });
      if (anchor !== null) {
        return result({
          seq: i,
          problem: 'the row has no chain digest, yet its session was created with a chain anchor',
        });
      }
      if (key !== undefined) {
        return result({
          seq: i,
          problem: `the row has no chain digest and no MAC (written before the chain existed); ${AUDIT_WITHOUT_KEY}`,
        });
      }
      unchained = { from: 0, to: i };
      continue;
    }
    const prev = i === 0 ? (anchor ?? ROOT_ANCHOR) : (previous ?? AFTER_UNCHAINED);
    const expected = chainLink(prev, link.digest, link.at);
    if (link.chain !== expected) {
      return result({
        seq: i,
        problem: `the stored chain digest ${link.chain} does not follow from the event and the link before it (${expected})`,
      });
    }
    previous = link.chain;
    if (key === undefined) continue;
    const verdict = key.check(link.chain, link.mac);
    if (!verdict.ok) return result({ seq: i, problem: macProblem(verdict, key) });
  }
  return result(null);
}

function macProblem(verdict: Exclude<ReturnType<LogKey['check']>, { ok: true }>, key: LogKey): string {
  switch (verdict.reason) {
    case 'missing':
      return `the row has no MAC (it was written without DH_LOG_KEY); ${AUDIT_WITHOUT_KEY}`;
    case 'malformed':
      return 'the row has a malformed MAC';
    case 'other-key':
      return `the row's MAC is under key id ${verdict.keyId}, not this DH_LOG_KEY's (${key.keyId})`;
    case 'mismatch':
      return `the row's MAC does not verify under key id ${key.keyId}: the row, or its MAC, was changed after the store wrote it`;
  }
}
