// The worker's session cache on a real SQLite store: bounded by count (least recently used dropped) and
// by idle time (an injected clock), and a dropped session re-read in full, with appends still checked.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SessionCache } from '../../src/activities/session-cache.js';
import { readWorkerConfig } from '../../src/config/worker-config.js';
import { Session, type EventDraft } from '../../src/core/index.js';
import type { SessionStore } from '../../src/stores/session-store.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { T0, sessionStart } from '../helpers/event-builders.js';

/** The real store, counting the reads of a whole log (what a cache miss costs). */
class CountingStore implements SessionStore {
  readonly #fullReads = new Map<string, number>();
  constructor(readonly inner: SessionStore) {}
  fullReads(sessionId: string): number {
    return this.#fullReads.get(sessionId) ?? 0;
  }
  create(...args: Parameters<SessionStore['create']>) {
    return this.inner.create(...args);
  }
  /** Each store append (one commit), as [sessionId, expectedSeq, event count]. */
  readonly appends: [string, number, number][] = [];
  append(...args: Parameters<SessionStore['append']>) {
    this.appends.push([args[0], args[1], args[2].length]);
    return this.inner.append(...args);
  }
  read(...args: Parameters<SessionStore['read']>) {
    const [sessionId, fromSeq] = args;
    if ((fromSeq ?? 0) === 0) this.#fullReads.set(sessionId, this.fullReads(sessionId) + 1);
    return this.inner.read(...args);
  }
  readChain(...args: Parameters<SessionStore['readChain']>) {
    return this.inner.readChain(...args);
  }
  head(...args: Parameters<SessionStore['head']>) {
    return this.inner.head(...args);
  }
  list(...args: Parameters<SessionStore['list']>) {
    return this.inner.list(...args);
  }
  close() {
    return this.inner.close();
  }
}

/** One more turn (enqueue, claim, user message, request, answer), the drafts the activities would append. */
function turnDrafts(turn: number, at = T0 + 1_000 * turn): EventDraft[] {
  const messageId = `m${turn}`;
  return [
    { type: 'inbox/enqueue', at, messageId, target: 'next-turn', wakeup: true, origin: 'followup', content: 'q' },
    { type: 'turn/start', at, turn },
    { type: 'inbox/claim', at, turn, step: 1, messageIds: [messageId] },
    { type: 'step/start', at, turn, step: 1 },
    { type: 'user/message', at, turn, step: 1, messageId, origin: 'followup', content: 'q' },
    { type: 'request/sent', at, turn, step: 1, digest: `sha256:${'0'.repeat(64)}`, bytes: 1 },
    {
      type: 'assistant/message',
      at,
      turn,
      step: 1,
      content: `answer ${turn}`,
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputUncached: 10, cacheRead: 0, output: 5, reasoning: 0 },
    },
    { type: 'step/end', at, turn, step: 1 },
    { type: 'turn/end', at, turn, reason: 'completed' },
  ];
}

describe('SessionCache (real SQLite)', () => {
  let dir: string;
  let store: CountingStore;
  let clock: number;
  const now = () => clock;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dh-session-cache-'));
    store = new CountingStore(SqliteSessionStore.open(join(dir, 'sessions.db')));
    clock = 0;
    for (const id of ['a', 'b', 'c']) {
      const log = new Session(id, [sessionStart(id)]);
      log.append(...turnDrafts(1), ...turnDrafts(2));
      await store.create(id, { createdAt: T0 });
      await store.append(id, 0, log.events);
    }
  });

  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('staged events reach the store with the next append, in one store append', async () => {
    const cache = new SessionCache(store, { now });
    const a = await cache.load('a');
    const head = a.head;
    const [first, second] = [turnDrafts(3).slice(0, 2), turnDrafts(3).slice(2)];
    cache.stage(a, first);
    expect(a.head).toBe(head + first.length);
    expect(await store.inner.head('a')).toBe(head); // nothing written yet
    store.appends.length = 0;
    const after = await cache.append(a, second);
    expect(store.appends).toEqual([['a', head, first.length + second.length]]);
    expect((await store.inner.read('a')).map((e) => e.type)).toEqual(after.events.map((e) => e.type));
    // An append with no drafts writes whatever is staged, and nothing when nothing is.
    cache.stage(after, turnDrafts(4).slice(0, 1));
    await cache.append(after, []);
    await cache.append(after, []);
    expect(store.appends).toHaveLength(2);
    expect(await store.inner.head('a')).toBe(after.head);
  });

  it('a load while events are staged re-reads the store: a copy ahead of the store is never handed out', async () => {
    const cache = new SessionCache(store, { now });
    const a = await cache.load('a');
    const head = a.head;
    cache.stage(a, turnDrafts(3).slice(0, 2)); // an activity that stages, then fails before appending
    const reloaded = await cache.load('a');
    expect(reloaded).not.toBe(a);
    expect(reloaded.head).toBe(head);
    expect(store.fullReads('a')).toBe(2);
    // The reloaded copy appends at the store's head as usual.
    await cache.append(reloaded, turnDrafts(3));
    expect(await store.inner.head('a')).toBe(head + turnDrafts(3).length);
  });

  it('beyond maxSessions drops the least recently used; a hit reads only new events', async () => {
    const cache = new SessionCache(store, { maxSessions: 2, now });
    await cache.load('a');
    await cache.load('b');
    await cache.load('a'); // a is now more recent than b
    await cache.load('c');
    expect(cache.size).toBe(2);
    expect([cache.has('a'), cache.has('b'), cache.has('c')]).toEqual([true, false, true]);
    expect([store.fullReads('a'), store.fullReads('b'), store.fullReads('c')]).toEqual([1, 1, 1]);

    await cache.load('a'); // a hit: only the events after its head are read
    expect(store.fullReads('a')).toBe(1);
    await cache.load('b'); // a miss: read in full, and c (now the least recent) goes
    expect(store.fullReads('b')).toBe(2);
    expect([cache.has('a'), cache.has('b'), cache.has('c')]).toEqual([true, true, false]);
  });

  it('an append counts as use', async () => {
    const cache = new SessionCache(store, { maxSessions: 2, now });
    const a = await cache.load('a');
    await cache.load('b');
    await cache.append(a, turnDrafts(3));
    await cache.load('c');
    expect([cache.has('a'), cache.has('b'), cache.has('c')]).toEqual([true, false, true]);
  });

  it('drops a session untouched for idleMs (load or append touches it)', async () => {
    const cache = new SessionCache(store, { idleMs: 1_000, now });
    const a = await cache.load('a');
    clock = 600;
    await cache.load('b');
    clock = 900;
    await cache.append(a, turnDrafts(3));
    clock = 1_599;
    expect([cache.has('a'), cache.has('b')]).toEqual([true, true]);
    clock = 1_600;
    expect([cache.has('a'), cache.has('b')]).toEqual([true, false]);
    clock = 1_900;
    expect(cache.size).toBe(0);

    const reloaded = await cache.load('a');
    expect(store.fullReads('a')).toBe(2);
    expect(reloaded.head).toBe(a.head);
  });

  it('a dropped session reloads with every event, and appends after the reload pass the optimistic check', async () => {
    const cache = new SessionCache(store, { maxSessions: 1, now });
    const before = await cache.append(await cache.load('a'), turnDrafts(3));
    await cache.load('b');
    expect(cache.has('a')).toBe(false);

    const after = await cache.load('a');
    expect(after).not.toBe(before);
    expect(store.fullReads('a')).toBe(2);
    expect(after.head).toBe(before.head);
    expect(after.events).toEqual(before.events);
    expect(after.deriveMessages()).toEqual(before.deriveMessages());

    const appended = await cache.append(after, turnDrafts(4));
    expect(appended.head).toBe(before.head + turnDrafts(4).length);
    expect(await store.head('a')).toBe(appended.head);
    expect(await store.read('a')).toEqual(appended.events);
  });

  it('a session dropped under an in-flight activity: its append still lands, and is not revived into the cache', async () => {
    const cache = new SessionCache(store, { maxSessions: 1, now });
    const held = await cache.load('a');
    await cache.load('b'); // evicts a while the "activity" still holds it
    const result = await cache.append(held, turnDrafts(3));
    expect(result).toBe(held);
    expect(await store.head('a')).toBe(held.head);
    expect(cache.has('a')).toBe(false);
    expect((await cache.load('a')).events).toEqual(held.events);
  });

  it('a stale holder after eviction loses the race to the fresh copy and gets the winner’s log', async () => {
    const cache = new SessionCache(store, { maxSessions: 1, now });
    const stale = await cache.load('a');
    await cache.load('b');
    const fresh = await cache.load('a'); // another activity re-reads a
    expect(fresh).not.toBe(stale);
    const enqueue = (content: string): EventDraft => ({
      type: 'inbox/enqueue',
      at: T0 + 5_000,
      messageId: 'm3',
      target: 'next-turn',
      wakeup: true,
      origin: 'followup',
      content,
    });
    await cache.append(fresh, [enqueue('winner')]);

    // Same slot (key), other content: the store keeps the winner; the cache re-reads and hands it back.
    const result = await cache.append(stale, [enqueue('loser')]);
    expect(result).not.toBe(stale);
    expect(result.head).toBe(fresh.head);
    expect(result.events.at(-1)).toMatchObject({ type: 'inbox/enqueue', content: 'winner' });
    expect(cache.has('a')).toBe(true);
  });

  it('forget drops the copy, and a later append through it does not bring it back', async () => {
    const cache = new SessionCache(store, { now });
    const held = await cache.load('a');
    cache.forget('a');
    await cache.append(held, turnDrafts(3));
    expect(cache.has('a')).toBe(false);
    await cache.load('a');
    expect(store.fullReads('a')).toBe(2);
  });

  it("receipts end with the store's chain head, whether the rows were appended here, read, or appended elsewhere", async () => {
    const head = async (id: string) => (await store.inner.readChain(id)).links.at(-1)?.chain;
    const cache = new SessionCache(store, { now });
    const a = await cache.load('a'); // a full read
    const loaded = cache.receiptsSince(a, a.head - 2);
    expect(loaded.map((r) => r.chain)).toEqual([undefined, await head('a')]);
    const before = a.head;
    await cache.append(a, turnDrafts(3)); // appended through this cache
    const appended = cache.receiptsSince(a, before);
    expect(appended).toHaveLength(turnDrafts(3).length);
    expect(appended.slice(0, -1).every((r) => r.chain === undefined)).toBe(true);
    expect(appended.at(-1)?.chain).toBe(await head('a'));
    // Another writer appends; the next load reads only those rows and learns their chain.
    await new SessionCache(store, { now }).append(await new SessionCache(store).load('a'), turnDrafts(4));
    const caught = await cache.load('a');
    expect(caught.head).toBe(await store.inner.head('a'));
    expect(cache.receiptsSince(caught, before).at(-1)?.chain).toBe(await head('a'));
    // Staged events are not in the store yet: no chain is claimed for them.
    cache.stage(caught, turnDrafts(5).slice(0, 1));
    expect(cache.receiptsSince(caught, before).at(-1)?.chain).toBeUndefined();
  });

  it('refuses limits that cannot bound anything', () => {
    expect(() => new SessionCache(store, { maxSessions: 0 })).toThrow(RangeError);
    expect(() => new SessionCache(store, { maxSessions: 1.5 })).toThrow(RangeError);
    expect(() => new SessionCache(store, { idleMs: 0 })).toThrow(RangeError);
  });
});

describe('worker configuration of the session cache', () => {
  it('DH_SESSION_CACHE_MAX / DH_SESSION_CACHE_IDLE_MS read as numbers; unset leaves the cache defaults', () => {
    expect(readWorkerConfig({})).toMatchObject({ sessionCacheMax: undefined, sessionCacheIdleMs: undefined });
    expect(readWorkerConfig({ DH_SESSION_CACHE_MAX: '64', DH_SESSION_CACHE_IDLE_MS: '30000' })).toMatchObject({
      sessionCacheMax: 64,
      sessionCacheIdleMs: 30_000,
    });
  });
});
