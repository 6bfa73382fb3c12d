// The chain and its key, without a database: what verifyChain finds for each way of forging a log, with
// and without a key, and a key that never shows its value.
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { eventDigest } from '../../src/core/event-digest.js';
import type { SessionEvent } from '../../src/core/events.js';
import {
  AFTER_UNCHAINED,
  chainLink,
  ROOT_ANCHOR,
  verifyChain,
  type ChainLink,
  type StoredChain,
} from '../../src/stores/log-chain.js';
import { LOG_KEY_INVALID, LogKey, LogKeyError, parseLogKey } from '../../src/stores/log-key.js';
import { retimed, sampleLog } from '../helpers/event-builders.js';

const KEY = new LogKey(new Uint8Array(32).fill(1));
const OTHER_KEY = new LogKey(new Uint8Array(32).fill(2));

/** The chain a store would write for `events` (from the root anchor), MACed under `key` when given. */
function chainOf(events: readonly SessionEvent[], key?: LogKey): ChainLink[] {
  let prev = ROOT_ANCHOR;
  return events.map((event) => {
    const chain = chainLink(prev, eventDigest(event), event.at);
    prev = chain;
    return { seq: event.seq, at: event.at, digest: eventDigest(event), chain, mac: key?.mac(chain) ?? null };
  });
}

/** The links a verifier derives from forged events, carrying the stored chain and MAC columns of `stored`. */
function relinked(events: readonly SessionEvent[], stored: readonly ChainLink[]): ChainLink[] {
  return events.map((event, i) => ({
    seq: event.seq,
    at: event.at,
    digest: eventDigest(event),
    chain: stored[i]?.chain ?? null,
    mac: stored[i]?.mac ?? null,
  }));
}

function renumbered(events: readonly SessionEvent[]): SessionEvent[] {
  return events.map((event, seq) => ({ ...event, seq }));
}

const log = sampleLog('s1', 2);
const target = 5;
/** The forgeries of the log: events as forged, and whether the forger recomputed the chain (and had no key). */
const forgeries: Array<[string, SessionEvent[]]> = [
  ['an edited body', log.map((e) => (e.seq === target ? ({ ...e, content: 'forged' } as SessionEvent) : e))],
  ['a deleted row, renumbered', renumbered([...log.slice(0, target), ...log.slice(target + 1)])],
  [
    'an inserted row',
    renumbered([
      ...log.slice(0, target),
      { ...log[target]!, content: 'inserted' } as SessionEvent,
      ...log.slice(target),
    ]),
  ],
  ['swapped rows', renumbered([...log.slice(0, target), log[target + 1]!, log[target]!, ...log.slice(target + 2)])],
  ['an edited timestamp', log.map((e) => (e.seq === target ? retimed(e, e.at + 1) : e))],
];

describe('verifyChain', () => {
  it('accepts the chain a store writes, with and without its key', () => {
    const links = chainOf(log, KEY);
    expect(verifyChain({ anchor: ROOT_ANCHOR, links })).toMatchObject({
      ok: true,
      links: log.length,
      unchained: null,
      broken: null,
      macs: 'not-checked',
      head: links.at(-1)?.chain,
    });
    expect(verifyChain({ anchor: ROOT_ANCHOR, links }, { key: KEY })).toMatchObject({ ok: true, macs: 'verified' });
  });

  for (const [what, forged] of forgeries) {
    it(`finds ${what} at its seq when the chain was left as it was`, () => {
      const stored = chainOf(log, KEY);
      const verdict = verifyChain({ anchor: ROOT_ANCHOR, links: relinked(forged, stored) });
      expect(verdict.broken?.seq).toBe(target);
      expect(verdict.broken?.problem).toContain('does not follow from the event and the link before it');
    });

    it(`misses ${what} with the whole chain recomputed when there is no key, and finds it with the key`, () => {
      const recomputed = chainOf(forged).map((link, i) => ({ ...link, mac: chainOf(log, KEY)[i]?.mac ?? null }));
      expect(verifyChain({ anchor: ROOT_ANCHOR, links: recomputed }).ok).toBe(true);
      const verdict = verifyChain({ anchor: ROOT_ANCHOR, links: recomputed }, { key: KEY });
      expect(verdict.broken).toEqual({
        seq: target,
        problem: expect.stringContaining('MAC does not verify') as unknown,
      });
    });
  }

  it('names a missing MAC, a MAC under another key and a malformed one', () => {
    const links = chainOf(log, KEY);
    const at = (i: number, mac: string | null) => links.map((l) => (l.seq === i ? { ...l, mac } : l));
    const check = (chain: StoredChain) => verifyChain(chain, { key: KEY }).broken;
    expect(check({ anchor: ROOT_ANCHOR, links: at(3, null) })?.problem).toMatch(
      /^the row has no MAC .*audit without DH_LOG_KEY for a chain-only check$/,
    );
    expect(check({ anchor: ROOT_ANCHOR, links: at(4, OTHER_KEY.mac(links[4]!.chain!)) })).toEqual({
      seq: 4,
      problem: `the row's MAC is under key id ${OTHER_KEY.keyId}, not this DH_LOG_KEY's (${KEY.keyId})`,
    });
    expect(check({ anchor: ROOT_ANCHOR, links: at(2, 'garbage') })).toEqual({
      seq: 2,
      problem: 'the row has a malformed MAC',
    });
  });

  it('reports a leading unchained run (a log older than the chain) and allows it nowhere else', () => {
    const chained = chainOf(log);
    let prev = AFTER_UNCHAINED;
    const upgraded = log.map((event, i): ChainLink => {
      if (i < 4) return { seq: i, at: event.at, digest: eventDigest(event), chain: null, mac: null };
      prev = chainLink(prev, eventDigest(event), event.at);
      return { seq: i, at: event.at, digest: eventDigest(event), chain: prev, mac: null };
    });
    expect(verifyChain({ anchor: null, links: upgraded })).toMatchObject({ ok: true, unchained: { from: 0, to: 3 } });
    // with a key, the unchained rows cannot verify
    expect(verifyChain({ anchor: null, links: upgraded }, { key: KEY }).broken?.seq).toBe(0);
    // a session created with an anchor was chained from its first row: a stripped chain is a break
    expect(verifyChain({ anchor: ROOT_ANCHOR, links: upgraded }).broken?.seq).toBe(0);
    // an unchained row after chained ones
    const holed = chained.map((l) => (l.seq === 6 ? { ...l, chain: null } : l));
    expect(verifyChain({ anchor: ROOT_ANCHOR, links: holed }).broken).toEqual({
      seq: 6,
      problem: 'the row has no chain digest, yet the rows before it are chained',
    });
    // a gap in the seqs
    expect(verifyChain({ anchor: ROOT_ANCHOR, links: chained.filter((l) => l.seq !== 2) }).broken?.seq).toBe(2);
  });

  it("binds a fork's first link to its anchor", () => {
    const links = chainOf(log);
    expect(verifyChain({ anchor: AFTER_UNCHAINED, links }).broken?.seq).toBe(0);
  });
});

describe('LogKey', () => {
  const value = Buffer.alloc(32, 9).toString('base64');

  it('parses 32 bytes of base64 or base64url, and names itself by an id only', () => {
    const key = parseLogKey(value);
    expect(parseLogKey(value.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')).keyId).toBe(key.keyId);
    expect(key.keyId).toMatch(/^[0-9a-f]{16}$/);
    expect(JSON.stringify({ key })).toBe(`{"key":{"keyId":"${key.keyId}"}}`);
    expect(inspect(key)).toBe(`LogKey { keyId: '${key.keyId}' }`);
    expect(key.mac('sha256:00')).toMatch(new RegExp(`^${key.keyId}:[0-9a-f]{64}$`));
  });

  it('refuses a value that is not 32 bytes of base64, without printing it', () => {
    for (const bad of ['not base64 at all!', Buffer.alloc(16, 3).toString('base64'), `${value}AAAA`]) {
      let error: unknown;
      try {
        parseLogKey(bad);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(LogKeyError);
      expect((error as LogKeyError).code).toBe(LOG_KEY_INVALID);
      expect((error as LogKeyError).message).toContain('DH_LOG_KEY');
      expect((error as LogKeyError).message).not.toContain(bad);
      expect(JSON.stringify((error as LogKeyError).details)).not.toContain(bad);
    }
  });
});
