// The SessionStore contract as one suite, registered once per backend: every backend must pass all of
// it against a real database (see sqlite-session-store.test.ts, postgres-session-store.test.ts).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventDigest } from '../../src/core/event-digest.js';
import { DhError, ErrorCode, InvalidEventError, StoreError } from '../../src/core/errors.js';
import type { SessionEvent } from '../../src/core/events.js';
import { AFTER_UNCHAINED, chainLink, ROOT_ANCHOR, verifyChain } from '../../src/stores/log-chain.js';
import { LogKey } from '../../src/stores/log-key.js';
import type { AppendResult, SessionStore } from '../../src/stores/session-store.js';
import {
  T0,
  assistantMessage,
  inboxEnqueue,
  retimed,
  sampleLog,
  sessionStart,
  stepStart,
  turnStart,
  userMessage,
} from '../helpers/event-builders.js';
import type { WorkerOutcome } from '../helpers/append-worker.js';

/** One isolated database per test, and the raw access the suite needs to reach behind the store. */
export interface StoreBackend {
  /** A new store instance (its own connections) on this test's database; with `logKey`, one that MACs rows. */
  open(options?: { logKey?: LogKey }): Promise<SessionStore>;
  /** What `openSessionStore` takes to reach this test's database from another process. */
  readonly spec: string;
  /** Overwrites a stored row's body with raw SQL, behind the store's back. */
  corruptBody(sessionId: string, seq: number, body: string): Promise<void>;
  /** Deletes a stored row with raw SQL, behind the store's back. */
  deleteRow(sessionId: string, seq: number): Promise<void>;
  /** Sets the chain, MAC and anchor columns of a session to NULL, as a database written before the chain has them. */
  clearChain(sessionId: string): Promise<void>;
  dispose(): Promise<void>;
}

const WORKER = fileURLToPath(new URL('../helpers/append-worker.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export function describeSessionStoreConformance(name: string, createBackend: () => Promise<StoreBackend>): void {
  describe(`${name} conformance`, () => {
    let backend: StoreBackend;
    let opened: SessionStore[];
    let store: SessionStore;

    /** Another store instance on the same database; closed after the test. */
    async function openStore(): Promise<SessionStore> {
      const instance = await backend.open();
      opened.push(instance);
      return instance;
    }

    /** A created session holding `events` (appended in one batch). */
    async function sessionWith(sessionId: string, events: readonly SessionEvent[]): Promise<void> {
      await store.create(sessionId, { createdAt: T0 });
      if (events.length > 0) await store.append(sessionId, 0, events);
    }

    beforeEach(async () => {
      backend = await createBackend();
      opened = [];
      store = await openStore();
    });

    afterEach(async () => {
      for (const instance of opened) await instance.close();
      await backend.dispose();
    });

    describe('create, head, list', () => {
      it('creates a session once; a second create is a no-op', async () => {
        expect(await store.create('s1', { createdAt: T0 })).toEqual({ created: true });
        expect(await store.create('s1', { createdAt: T0 + 5 })).toEqual({ created: false });
        expect(await store.head('s1')).toBe(0);
        expect(await store.read('s1')).toEqual([]);
        expect(await store.list()).toEqual([{ sessionId: 's1', createdAt: T0, head: 0, parentSessionId: null }]);
      });

      it('lists sessions newest first with their heads and parents, up to a limit', async () => {
        await sessionWith('old', sampleLog('old', 1));
        await store.create('mid', { createdAt: T0 + 10 });
        await store.create('new', { createdAt: T0 + 20, parentSessionId: 'old' });
        await store.append('new', 0, [sessionStart('new')]);
        expect(await store.list()).toEqual([
          { sessionId: 'new', createdAt: T0 + 20, head: 1, parentSessionId: 'old' },
          { sessionId: 'mid', createdAt: T0 + 10, head: 0, parentSessionId: null },
          { sessionId: 'old', createdAt: T0, head: 9, parentSessionId: null },
        ]);
        expect((await store.list({ limit: 2 })).map((s) => s.sessionId)).toEqual(['new', 'mid']);
        expect(await store.list({ limit: 0 })).toEqual([]);
      });

      it('pages a listing after a cursor: every session once, in order, ties on createdAt broken by id', async () => {
        const ids = Array.from({ length: 23 }, (_, i) => `page-${String(i).padStart(2, '0')}`);
        // Three sessions per millisecond: pages must split ties by id, never skip or repeat one.
        for (const [i, id] of ids.entries()) await store.create(id, { createdAt: T0 + Math.floor(i / 3) });
        const seen: string[] = [];
        let after: { createdAt: number; sessionId: string } | undefined;
        for (let page = 0; page < 10; page++) {
          const rows = await store.list({ limit: 5, ...(after ? { after } : {}) });
          seen.push(...rows.map((r) => r.sessionId));
          const last = rows.at(-1);
          if (rows.length < 5 || last === undefined) break;
          after = { createdAt: last.createdAt, sessionId: last.sessionId };
        }
        expect(seen).toEqual((await store.list()).map((r) => r.sessionId));
        expect(new Set(seen).size).toBe(ids.length);
        expect(seen.slice(0, 4)).toEqual(['page-22', 'page-21', 'page-20', 'page-19']);
        await expect(store.list({ after: { createdAt: -1, sessionId: 'page-00' } })).rejects.toThrow();
      });

      it('refuses an unknown session with SESSION_NOT_FOUND', async () => {
        await expectStoreError(store.head('nope'), ErrorCode.SessionNotFound, 'nope');
        await expectStoreError(store.read('nope'), ErrorCode.SessionNotFound, 'nope');
        await expectStoreError(store.append('nope', 0, [sessionStart('nope')]), ErrorCode.SessionNotFound, 'nope');
      });
    });

    describe('append and read', () => {
      it('round-trips a log byte for byte, with receipts carrying each event digest', async () => {
        const log = sampleLog('s1', 3);
        await store.create('s1', { createdAt: T0 });
        const result = await store.append('s1', 0, log);
        expect(result.head).toBe(log.length);
        expect(result.events).toEqual(log);
        expect(result.receipts).toEqual(
          log.map((e) => ({
            seq: e.seq,
            type: e.type,
            key: e.key,
            digest: eventDigest(e),
            chain: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) as unknown,
            status: 'appended',
          })),
        );
        const read = await store.read('s1');
        expect(read).toEqual(log);
        expect(JSON.stringify(read)).toBe(JSON.stringify(log));
        expect(await store.head('s1')).toBe(log.length);
      });

      it('appends batch after batch, each at the head', async () => {
        const log = sampleLog('s1', 2);
        await store.create('s1', { createdAt: T0 });
        for (let seq = 0; seq < log.length; seq += 3) {
          const batch = log.slice(seq, seq + 3);
          const result = await store.append('s1', seq, batch);
          expect(result.head).toBe(seq + batch.length);
          expect(await store.head('s1')).toBe(seq + batch.length);
        }
        expect(await store.read('s1')).toEqual(log);
      });

      it('reads ranges [fromSeq, toSeq)', async () => {
        const log = sampleLog('s1', 2);
        await sessionWith('s1', log);
        expect(await store.read('s1', 3)).toEqual(log.slice(3));
        expect(await store.read('s1', 3, 6)).toEqual(log.slice(3, 6));
        expect(await store.read('s1', 0, 1)).toEqual([log[0]]);
        expect(await store.read('s1', 4, 4)).toEqual([]);
        expect(await store.read('s1', 6, 2)).toEqual([]);
        expect(await store.read('s1', 10, 1000)).toEqual(log.slice(10));
        expect(await store.read('s1', log.length)).toEqual([]);
        expect(await store.read('s1', 1000)).toEqual([]);
      });

      it('keeps arbitrary strings exact (control characters, lone surrogates, astral code points)', async () => {
        const unit = fc.oneof(
          fc.constantFrom('\u0000', '\ud800', '\udfff', '\u2028', '"', '\\', '\u{1f600}', 'é'),
          fc.integer({ min: 0, max: 0x10ffff }).map((cp) => String.fromCodePoint(cp)),
        );
        let n = 0;
        await fc.assert(
          fc.asyncProperty(fc.string({ unit, maxLength: 40 }), fc.string({ unit, maxLength: 10 }), async (text, id) => {
            const sessionId = `p${n++}`;
            const messageId = `id-${id}`.slice(0, 200);
            const events = [sessionStart(sessionId), inboxEnqueue(1, messageId, text), assistantMessage(2, 1, 1, text)];
            await sessionWith(sessionId, events);
            const read = await store.read(sessionId);
            expect(JSON.stringify(read)).toBe(JSON.stringify(events));
            expect(read.map((e) => eventDigest(e))).toEqual(events.map((e) => eventDigest(e)));
          }),
          { numRuns: 30 },
        );
      });

      it('returns fresh objects: mutating what append or read returned changes nothing stored', async () => {
        const log = sampleLog('s1', 1);
        await store.create('s1', { createdAt: T0 });
        const result = await store.append('s1', 0, log);
        (result.events[1] as { at: number }).at = 1;
        (log[2] as { at: number }).at = 2;
        const read = await store.read('s1');
        (read[3] as { at: number }).at = 3;
        expect(await store.read('s1')).toEqual(sampleLog('s1', 1));
      });
    });

    describe('contiguity', () => {
      it('refuses a gap with SEQ_GAP and writes nothing', async () => {
        await sessionWith('s1', [sessionStart('s1')]);
        await expectStoreError(store.append('s1', 2, [turnStart(2, 1)]), ErrorCode.SeqGap, 's1', 2);
        expect(await store.head('s1')).toBe(1);
      });

      it('refuses a different event at a filled seq with SEQ_CONFLICT', async () => {
        const log = sampleLog('s1', 1);
        await sessionWith('s1', log);
        await expectStoreError(store.append('s1', 2, [turnStart(2, 7)]), ErrorCode.SeqConflict, 's1', 2);
        expect(await store.read('s1')).toEqual(log);
      });

      it('writes nothing of a batch that fails after a filled or a free slot', async () => {
        const log = [sessionStart('s1'), turnStart(1, 1)];
        await sessionWith('s1', log);
        // existing, then a conflict at seq 1, then a free slot
        await expectStoreError(
          store.append('s1', 0, [log[0]!, turnStart(1, 9), stepStart(2, 1, 1)]),
          ErrorCode.SeqConflict,
          's1',
          1,
        );
        // a free slot, then a key already used at seq 1
        await expectStoreError(
          store.append('s1', 2, [stepStart(2, 1, 1), turnStart(3, 1)]),
          ErrorCode.DuplicateKey,
          's1',
          3,
        );
        // a free slot, then a key repeated inside the batch
        await expectStoreError(
          store.append('s1', 2, [stepStart(2, 1, 1), stepStart(3, 1, 1)]),
          ErrorCode.DuplicateKey,
          's1',
          3,
        );
        expect(await store.read('s1')).toEqual(log);
        expect(await store.head('s1')).toBe(2);
      });

      it('refuses a key already used at another seq with DUPLICATE_EVENT_KEY', async () => {
        await sessionWith('s1', [sessionStart('s1'), turnStart(1, 1)]);
        await expectStoreError(store.append('s1', 2, [turnStart(2, 1)]), ErrorCode.DuplicateKey, 's1', 2);
        expect(await store.head('s1')).toBe(2);
      });
    });

    describe('idempotent retry', () => {
      it('returns the stored events as existing for the same events again, duplicating nothing', async () => {
        const log = sampleLog('s1', 2);
        await store.create('s1', { createdAt: T0 });
        const first = await store.append('s1', 0, log);
        const again = await store.append('s1', 0, log);
        expect(again.head).toBe(log.length);
        expect(again.events).toEqual(first.events);
        expect(again.receipts).toEqual(first.receipts.map((r) => ({ ...r, status: 'existing' })));
        const middle = await store.append('s1', 3, log.slice(3, 6));
        expect(middle.receipts.map((r) => r.status)).toEqual(['existing', 'existing', 'existing']);
        expect(await store.read('s1')).toEqual(log);
      });

      it('treats a retry with another timestamp as the same event (the digest excludes time)', async () => {
        const log = sampleLog('s1', 1);
        await sessionWith('s1', log);
        const retry = log.slice(4).map((e) => retimed(e, e.at + 60_000));
        const result = await store.append('s1', 4, retry);
        expect(result.receipts.map((r) => r.status)).toEqual(retry.map(() => 'existing'));
        expect(result.receipts.map((r) => r.digest)).toEqual(log.slice(4).map((e) => eventDigest(e)));
        expect(result.receipts.map((r) => r.digest)).toEqual(retry.map((e) => eventDigest(e)));
        expect(result.events).toEqual(log.slice(4)); // the stored events, with their original times
        expect(await store.read('s1')).toEqual(log);
      });

      it('appends the new tail of a batch whose head is already stored', async () => {
        const log = sampleLog('s1', 1);
        await sessionWith('s1', log.slice(0, 3));
        const result = await store.append('s1', 1, log.slice(1));
        expect(result.receipts.map((r) => r.status)).toEqual([
          'existing',
          'existing',
          ...log.slice(3).map(() => 'appended'),
        ]);
        expect(result.head).toBe(log.length);
        expect(await store.read('s1')).toEqual(log);
      });

      it('accepts an empty batch at the head', async () => {
        await sessionWith('s1', [sessionStart('s1')]);
        expect(await store.append('s1', 1, [])).toEqual({ events: [], receipts: [], head: 1 });
      });
    });

    describe('inbox messageIds', () => {
      it('refuses a messageId already enqueued at another seq with DUPLICATE_MESSAGE_ID', async () => {
        await sessionWith('s1', [sessionStart('s1'), inboxEnqueue(1, 'm1', 'hello')]);
        await expectStoreError(
          store.append('s1', 2, [inboxEnqueue(2, 'm1', 'hello again', T0 + 99)]),
          ErrorCode.DuplicateMessageId,
          's1',
          2,
        );
        await expectStoreError(
          store.append('s1', 2, [inboxEnqueue(2, 'm2'), inboxEnqueue(3, 'm2')]),
          ErrorCode.DuplicateMessageId,
          's1',
          3,
        );
        expect(await store.head('s1')).toBe(2);
      });

      it('keeps apart ids that SQL text would merge (lone surrogates, NUL, escapes)', async () => {
        const ids = ['x\ud800', 'x\udc00', 'x\ufffd', 'a\u0000b', 'a\\u0000b', 'a\\\\u0000b', '\udc00\ud800'];
        const events = [sessionStart('s1'), ...ids.map((id, i) => inboxEnqueue(i + 1, id))];
        await store.create('s1', { createdAt: T0 });
        const appended = await store.append('s1', 0, events);
        expect(appended.receipts.map((r) => r.key)).toEqual(events.map((e) => e.key));
        const retried = await store.append('s1', 0, events);
        expect(retried.receipts.map((r) => [r.key, r.status])).toEqual(events.map((e) => [e.key, 'existing']));
        expect(JSON.stringify(await store.read('s1'))).toBe(JSON.stringify(events));
        await expectStoreError(
          store.append('s1', events.length, [inboxEnqueue(events.length, 'x\ud800')]),
          ErrorCode.DuplicateMessageId,
          's1',
          events.length,
        );
      });

      it('refuses session ids SQL text cannot keep exactly', async () => {
        await expect(store.create('bad\ud800', { createdAt: T0 })).rejects.toThrow(TypeError);
        await expect(store.create('bad\u0000', { createdAt: T0 })).rejects.toThrow(TypeError);
        await expect(store.head('bad\ud800')).rejects.toThrow(TypeError);
      });

      it('lets the delivered user/message carry the enqueued messageId', async () => {
        const events = [sessionStart('s1'), inboxEnqueue(1, 'm1'), turnStart(2, 1), userMessage(3, 1, 1, 'm1')];
        await sessionWith('s1', events);
        expect(await store.read('s1')).toEqual(events);
      });
    });

    describe('validation before writing', () => {
      const invalid: Array<[string, (seq: number) => unknown]> = [
        ['a schema violation', (seq) => ({ ...turnStart(seq, 1), turn: 0 })],
        ['a missing field', (seq) => withoutField(turnStart(seq, 1), 'turn')],
        ['an unknown field', (seq) => ({ ...turnStart(seq, 1), extra: true })],
        ['an unknown type', (seq) => ({ ...turnStart(seq, 1), type: 'turn/begin' })],
        ['NaN', (seq) => ({ ...turnStart(seq, 1), at: Number.NaN })],
        ['-0', (seq) => ({ ...turnStart(seq, 1), at: -0 })],
        ['Infinity', (seq) => ({ ...turnStart(seq, 1), at: Number.POSITIVE_INFINITY })],
        ['undefined', (seq) => ({ ...inboxEnqueue(seq, 'm9'), source: undefined })],
        ['a non-plain object', (seq) => ({ ...inboxEnqueue(seq, 'm9'), content: [new Date(0)] })],
        ['a wrong key', (seq) => ({ ...turnStart(seq, 1), key: 'turn/start/2' })],
        ['a wrong seq', (seq) => turnStart(seq + 1, 1)],
        ['null', () => null],
      ];
      for (const [what, build] of invalid) {
        it(`refuses ${what} with INVALID_EVENT and appends nothing of the batch`, async () => {
          await sessionWith('s1', [sessionStart('s1')]);
          const batch = [inboxEnqueue(1, 'm1'), build(2) as SessionEvent];
          const error = await store.append('s1', 1, batch).then(
            () => null,
            (e: unknown) => e,
          );
          expect(error).toBeInstanceOf(InvalidEventError);
          expect((error as InvalidEventError).code).toBe(ErrorCode.InvalidEvent);
          expect((error as InvalidEventError).message).toContain('"s1"');
          expect(await store.head('s1')).toBe(1);
          expect(await store.read('s1')).toEqual([sessionStart('s1')]);
        });
      }
    });

    describe('concurrent writers', () => {
      it('lets exactly one of several store instances win a seq; same-key losers get its events', async () => {
        const stores = [store, ...(await Promise.all([1, 2, 3, 4].map(() => openStore())))];
        await sessionWith('race', [sessionStart('race')]);
        let head = 1;
        for (let round = 1; round <= 6; round++) {
          const batches = raceBatches(head, round, stores.length);
          // Started in a rotating order: a synchronous backend lets the first caller win, so rotate who
          // that is; a truly concurrent one races them all anyway.
          const pending: Array<Promise<WorkerOutcome>> = [];
          for (let k = 0; k < stores.length; k++) {
            const i = (k + round) % stores.length;
            pending[i] = outcomeOf(stores[i]!.append('race', head, batches[i]!.events));
          }
          const outcomes = await Promise.all(pending);
          const winner = expectOneWinner(batches, outcomes);
          expect(await store.read('race', head)).toEqual(winner.events);
          head = winner.head;
          expect(await store.head('race')).toBe(head);
        }
        const chain = await store.readChain('race');
        expect(verifyChain(chain)).toMatchObject({ ok: true, links: head, unchained: null });
      });

      it('answers an instance whose last view of the log end is stale as a fresh instance would', async () => {
        // A store may remember where a log ended when it last wrote or read it (to append there without
        // reading first); another writer moving the end must never let that memory decide anything.
        const log = sampleLog('s1', 2);
        const other = await openStore();
        await sessionWith('s1', log.slice(0, 4));
        await other.append('s1', 4, log.slice(4, 6));
        await expectStoreError(store.append('s1', 4, [inboxEnqueue(4, 'late')]), ErrorCode.SeqConflict, 's1', 4);
        const again = await store.append('s1', 4, log.slice(4, 6));
        expect(again.receipts.map((r) => r.status)).toEqual(['existing', 'existing']);
        await store.append('s1', 6, log.slice(6, 10));
        await other.append('s1', 10, log.slice(10, 12));
        await store.append('s1', 12, log.slice(12));
        expect(await other.read('s1')).toEqual(log);
        expect(verifyChain(await other.readChain('s1'))).toMatchObject({ ok: true, links: log.length });
        // The last row it saw deleted behind its back: the next append finds the hole, as a fresh store does.
        await backend.deleteRow('s1', log.length - 1);
        await expectStoreError(
          store.append('s1', log.length, [inboxEnqueue(log.length, 'after')]),
          ErrorCode.SeqGap,
          's1',
          log.length,
        );
      });

      it('lets exactly one of several processes win a seq; same-key losers get its events', async () => {
        await sessionWith('race', [sessionStart('race')]);
        const batches = raceBatches(1, 1, 4);
        const outcomes = await runWorkers(
          backend.spec,
          'race',
          1,
          batches.map((b) => b.events),
        );
        const winner = expectOneWinner(batches, outcomes);
        expect(await store.read('race', 1)).toEqual(winner.events);
        expect(await store.head('race')).toBe(winner.head);
        const chain = await store.readChain('race');
        expect(chain.links.slice(1).map((l) => l.chain)).toEqual(winner.receipts.map((r) => r.chain));
        expect(verifyChain(chain).ok).toBe(true);
      }, 60_000);
    });

    describe('hash chain', () => {
      it('links every row to the one before it from the root anchor, across batches, as readChain shows', async () => {
        const log = sampleLog('s1', 2);
        await store.create('s1', { createdAt: T0 });
        const receipts = [];
        for (let seq = 0; seq < log.length; seq += 4) {
          receipts.push(...(await store.append('s1', seq, log.slice(seq, seq + 4))).receipts);
        }
        let prev = ROOT_ANCHOR;
        const expected = log.map((e) => (prev = chainLink(prev, eventDigest(e), e.at)));
        expect(receipts.map((r) => r.chain)).toEqual(expected);
        const chain = await store.readChain('s1');
        expect(chain).toEqual({
          anchor: ROOT_ANCHOR,
          links: log.map((e, i) => ({ seq: e.seq, at: e.at, digest: eventDigest(e), chain: expected[i], mac: null })),
        });
        expect(verifyChain(chain)).toMatchObject({ ok: true, head: expected.at(-1), macs: 'not-checked' });
        expect((await store.readChain('s1', 3, 5)).links.map((l) => l.seq)).toEqual([3, 4]);
        const seen: Array<[number, string | null]> = [];
        await store.read('s1', 2, 4, { onChain: (seq, c) => seen.push([seq, c]) });
        expect(seen).toEqual([
          [2, expected[2]],
          [3, expected[3]],
        ]);
        await expectStoreError(store.readChain('nope'), ErrorCode.SessionNotFound, 'nope');
      });

      it('returns the stored chain to a retry, even one with another timestamp (idempotent)', async () => {
        const log = sampleLog('s1', 1);
        await store.create('s1', { createdAt: T0 });
        const first = await store.append('s1', 0, log);
        const retry = await store.append(
          's1',
          2,
          log.slice(2).map((e) => retimed(e, e.at + 60_000)),
        );
        expect(retry.receipts.map((r) => r.chain)).toEqual(first.receipts.slice(2).map((r) => r.chain));
        expect((await store.readChain('s1')).links.map((l) => l.chain)).toEqual(first.receipts.map((r) => r.chain));
      });

      it("starts a session's chain at the anchor it was created with (a fork's: the parent's chain)", async () => {
        await sessionWith('parent', sampleLog('parent', 1));
        const forkPoint = (await store.readChain('parent', 3, 4)).links[0]!.chain!;
        await store.create('child', { createdAt: T0, parentSessionId: 'parent', chainAnchor: forkPoint });
        const start = sessionStart('child');
        const [receipt] = (await store.append('child', 0, [start])).receipts;
        expect(receipt?.chain).toBe(chainLink(forkPoint, eventDigest(start), start.at));
        expect((await store.readChain('child')).anchor).toBe(forkPoint);
        // a second create (as the workflow's openSession does) keeps the anchor
        await store.create('child', { createdAt: T0 });
        expect((await store.readChain('child')).anchor).toBe(forkPoint);
        await expect(store.create('odd', { createdAt: T0, chainAnchor: 'sha256:xyz' })).rejects.toThrow(TypeError);
      });

      it('MACs every inserted row under the key when the store has one, and never without', async () => {
        const key = new LogKey(new Uint8Array(32).fill(7));
        const keyed = await backend.open({ logKey: key });
        opened.push(keyed);
        const log = sampleLog('s1', 1);
        await keyed.create('s1', { createdAt: T0 });
        await keyed.append('s1', 0, log.slice(0, 4));
        await store.append('s1', 4, log.slice(4)); // an unkeyed writer on the same database
        const chain = await keyed.readChain('s1');
        expect(chain.links.map((l) => l.mac?.split(':')[0] ?? null)).toEqual(
          log.map((e) => (e.seq < 4 ? key.keyId : null)),
        );
        for (const link of chain.links.slice(0, 4)) expect(link.mac).toBe(key.mac(link.chain!));
        expect(verifyChain(chain).ok).toBe(true);
        expect(verifyChain(chain, { key }).broken).toEqual({
          seq: 4,
          problem: expect.stringContaining('the row has no MAC') as unknown,
        });
        // a retry through the keyed store returns what is stored; it does not MAC rows after the fact
        await keyed.append('s1', 4, log.slice(4));
        expect((await keyed.readChain('s1', 4)).links.every((l) => l.mac === null)).toBe(true);
      });

      it('links a chained row after rows that have none to the fixed after-unchained value', async () => {
        const log = sampleLog('s1', 1);
        await sessionWith('s1', log.slice(0, 3));
        await backend.clearChain('s1');
        const next = await store.append('s1', 3, log.slice(3, 4));
        expect(next.receipts[0]?.chain).toBe(chainLink(AFTER_UNCHAINED, eventDigest(log[3]!), log[3]!.at));
        const chain = await store.readChain('s1');
        expect(chain.links.map((l) => l.chain === null)).toEqual([true, true, true, false]);
        expect(chain.anchor).toBeNull();
        expect(verifyChain(chain)).toMatchObject({ ok: true, unchained: { from: 0, to: 2 } });
        expect(await store.read('s1')).toEqual(log.slice(0, 4));
      });
    });

    describe('durability and load validation', () => {
      it('loses nothing across close and reopen', async () => {
        const log = sampleLog('s1', 2);
        await sessionWith('s1', log);
        await store.create('s2', { createdAt: T0 + 1, parentSessionId: 's1' });
        const listed = await store.list();
        await store.close();
        const reopened = await openStore();
        expect(await reopened.read('s1')).toEqual(log);
        expect(await reopened.head('s1')).toBe(log.length);
        expect(await reopened.list()).toEqual(listed);
        const more = await reopened.append('s1', log.length, [turnStart(log.length, 3)]);
        expect(more.receipts[0]?.status).toBe('appended');
      });

      const corruptions: Array<[string, (original: SessionEvent) => string]> = [
        ['a body that is not JSON', () => '{"type": "turn/start",'],
        ['a body that breaks the schema', (e) => JSON.stringify({ ...e, turn: 0 })],
        ['a body with another seq', (e) => JSON.stringify({ ...e, seq: e.seq + 1 })],
        ['a valid event that is not the one stored', (e) => JSON.stringify({ ...e, content: 'edited' })],
      ];
      for (const [what, corrupt] of corruptions) {
        it(`fails read on ${what}, naming the session and the seq`, async () => {
          const log = sampleLog('s1', 1);
          await sessionWith('s1', log);
          const target = log[5]!; // assistant/message
          await backend.corruptBody('s1', target.seq, corrupt(target));
          await expectInvalidStored(store.read('s1'), 's1', target.seq);
          await expectInvalidStored(store.read('s1', target.seq, target.seq + 1), 's1', target.seq);
          // a retry that touches the bad row does not paper over it either
          await expectInvalidStored(store.append('s1', target.seq, [target]), 's1', target.seq);
          expect(await store.read('s1', 0, target.seq)).toEqual(log.slice(0, target.seq));
        });
      }

      it('fails read on a row missing from the middle of the log, naming the session and the seq', async () => {
        const log = sampleLog('s1', 1);
        await sessionWith('s1', log);
        await backend.deleteRow('s1', 3);
        await expectInvalidStored(store.read('s1'), 's1', 3);
        await expectInvalidStored(store.read('s1', 3), 's1', 3);
        await expectInvalidStored(store.append('s1', 3, [log[3]!]), 's1', 3);
        expect(await store.read('s1', 4)).toEqual(log.slice(4));
      });
    });
  });
}

/** Race round `round` at `seq`: writers 0-2 share keys (different times), the rest each use their own. */
function raceBatches(seq: number, round: number, writers: number): Array<{ group: string; events: SessionEvent[] }> {
  return Array.from({ length: writers }, (_, w) =>
    w < 3
      ? { group: 'same', events: [turnStart(seq, round, T0 + w), stepStart(seq + 1, round, 1, T0 + w)] }
      : { group: `own-${w}`, events: [inboxEnqueue(seq, `r${round}-w${w}`)] },
  );
}

/**
 * Exactly one writer appended; the writers that sent the same keys got its events back as `existing`;
 * every other writer got SEQ_CONFLICT. Returns the winner's result.
 */
function expectOneWinner(batches: ReadonlyArray<{ group: string }>, outcomes: readonly WorkerOutcome[]): AppendResult {
  const winners = outcomes.flatMap((o, i) =>
    o.ok && o.result.receipts.every((r) => r.status === 'appended') ? [{ i, result: o.result }] : [],
  );
  expect(winners).toHaveLength(1);
  const winner = winners[0]!;
  const group = batches[winner.i]!.group;
  outcomes.forEach((outcome, i) => {
    if (i === winner.i) return;
    if (batches[i]!.group === group) {
      expect(outcome.ok, JSON.stringify(outcome)).toBe(true);
      if (!outcome.ok) return;
      expect(outcome.result.receipts.map((r) => r.status)).toEqual(winner.result.receipts.map(() => 'existing'));
      expect(outcome.result.receipts.map((r) => r.digest)).toEqual(winner.result.receipts.map((r) => r.digest));
      // The winner's chain, computed once at its insert: losers agree with it.
      expect(outcome.result.receipts.map((r) => r.chain)).toEqual(winner.result.receipts.map((r) => r.chain));
      expect(outcome.result.events).toEqual(winner.result.events);
      expect(outcome.result.head).toBe(winner.result.head);
    } else {
      expect(outcome).toMatchObject({ ok: false, code: ErrorCode.SeqConflict });
    }
  });
  return winner.result;
}

async function outcomeOf(append: Promise<AppendResult>): Promise<WorkerOutcome> {
  try {
    return { ok: true, result: await append };
  } catch (error) {
    return { ok: false, code: error instanceof DhError ? error.code : null, message: String(error) };
  }
}

/** Starts one append-worker process per batch, releases them together once all are ready. */
async function runWorkers(
  spec: string,
  sessionId: string,
  expectedSeq: number,
  batches: readonly SessionEvent[][],
): Promise<WorkerOutcome[]> {
  const workers = batches.map((events) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', WORKER, spec, sessionId, String(expectedSeq), JSON.stringify(events)],
      { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const ready = new Promise<void>((resolve, reject) => {
      child.stdout.on('data', () => stdout.startsWith('ready\n') && resolve());
      child.once('close', (code) => reject(new Error(`worker exited (${code}) before ready: ${stderr}`)));
    });
    const done = new Promise<WorkerOutcome>((resolve, reject) => {
      child.once('close', (code) => {
        const line = stdout.split('\n').at(-2);
        if (code === 0 && line !== undefined) resolve(JSON.parse(line) as WorkerOutcome);
        else reject(new Error(`worker exited with ${code}: ${stderr}${stdout}`));
      });
    });
    ready.catch(() => {}); // its failure also fails `done`, which is awaited
    return { child, ready, done };
  });
  try {
    await Promise.all(workers.map((w) => w.ready));
    for (const w of workers) w.child.stdin.end('go\n');
    return await Promise.all(workers.map((w) => w.done));
  } finally {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill();
  }
}

async function expectStoreError(promise: Promise<unknown>, code: string, sessionId: string, seq?: number) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreError);
  expect((error as StoreError).code).toBe(code);
  expect((error as StoreError).message).toContain(`"${sessionId}"`);
  expect((error as StoreError).details.sessionId).toBe(sessionId);
  if (seq !== undefined) {
    expect((error as StoreError).message).toContain(`seq ${seq}`);
    expect((error as StoreError).details.seq).toBe(seq);
  }
}

async function expectInvalidStored(promise: Promise<unknown>, sessionId: string, seq: number) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InvalidEventError);
  expect((error as InvalidEventError).message).toContain(`session "${sessionId}" at seq ${seq}`);
  expect((error as InvalidEventError).details).toMatchObject({ sessionId, seq });
}

function withoutField(event: SessionEvent, field: string): unknown {
  const copy: Record<string, unknown> = { ...event };
  delete copy[field];
  return copy;
}
