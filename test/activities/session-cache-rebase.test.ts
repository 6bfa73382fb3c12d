// Two writers on one session's log, on a real SQLite store: a step's activity and the workflow's concurrent
// appendInbox. An append refused because rows landed in between is rebased when those rows, or all of its
// own, only ride along (inbox/enqueue, inbox/downgrade); any other race still fails with SEQ_CONFLICT. In one
// process the cache serializes the two, so neither sees the other's half-done append.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SessionCache } from '../../src/activities/session-cache.js';
import { DhError, Session, type EventDraft } from '../../src/core/index.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { T0, sessionStart } from '../helpers/event-builders.js';

const ID = 'two-writers';
const at = T0 + 1;

function enqueue(messageId: string, target: 'next-step' | 'next-turn' = 'next-step'): EventDraft {
  return { type: 'inbox/enqueue', at, messageId, target, wakeup: true, origin: 'steer', content: `say ${messageId}` };
}

/** A turn's first step up to its request: what a model step appends before it calls the provider. */
const stepOpen: EventDraft[] = [
  { type: 'inbox/enqueue', at, messageId: 'f1', target: 'next-turn', wakeup: true, origin: 'followup', content: 'q' },
  { type: 'turn/start', at, turn: 1 },
  { type: 'inbox/claim', at, turn: 1, step: 1, messageIds: ['f1'] },
  { type: 'step/start', at, turn: 1, step: 1 },
  { type: 'user/message', at, turn: 1, step: 1, messageId: 'f1', origin: 'followup', content: 'q' },
  { type: 'request/sent', at, turn: 1, step: 1, digest: `sha256:${'0'.repeat(64)}`, bytes: 1 },
];
const answer: EventDraft = {
  type: 'assistant/message',
  at,
  turn: 1,
  step: 1,
  content: 'done',
  toolCalls: [],
  finishReason: 'stop',
  usage: { inputUncached: 10, cacheRead: 0, output: 5, reasoning: 0 },
};

describe('SessionCache with two writers (real SQLite)', () => {
  let dir: string;
  let store: SqliteSessionStore;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dh-cache-rebase-'));
    store = SqliteSessionStore.open(join(dir, 'sessions.db'));
    const log = new Session(ID, [sessionStart(ID)]);
    log.append(...stepOpen);
    await store.create(ID, { createdAt: T0 });
    await store.append(ID, 0, log.events);
  });

  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("rebases a step's answer over messages another worker logged while it streamed", async () => {
    // Two caches: the step's worker and the one that ran appendInbox.
    const stepWorker = new SessionCache(store);
    const inboxWorker = new SessionCache(store);
    const step = await stepWorker.load(ID);
    const head = step.head;
    await inboxWorker.append(await inboxWorker.load(ID), [enqueue('s1'), enqueue('s2')]);

    const after = await stepWorker.append(step, [answer, { type: 'step/end', at, turn: 1, step: 1 }]);
    const stored = await store.read(ID);
    expect(stored.slice(head).map((e) => e.type)).toEqual([
      'inbox/enqueue',
      'inbox/enqueue',
      'assistant/message',
      'step/end',
    ]);
    expect(after.events.map((e) => e.key)).toEqual(stored.map((e) => e.key));
    // The rebased session knows the messages as queued, ready for the next step's claim.
    expect([...after.state.queue.keys()]).toEqual(['s1', 's2']);
  });

  it("rebases messages over a step's rows another worker appended first", async () => {
    const inboxWorker = new SessionCache(store);
    const stepWorker = new SessionCache(store);
    const inbox = await inboxWorker.load(ID);
    await stepWorker.append(await stepWorker.load(ID), [answer]);

    const after = await inboxWorker.append(inbox, [
      enqueue('late', 'next-turn'),
      { type: 'inbox/downgrade', at, messageId: 'late', requested: 'next-step' },
    ]);
    expect((await store.read(ID)).slice(-3).map((e) => e.type)).toEqual([
      'assistant/message',
      'inbox/enqueue',
      'inbox/downgrade',
    ]);
    expect(after.head).toBe(await store.head(ID));
  });

  it('drops a message the other writer logged already, and appends the rest once', async () => {
    const a = new SessionCache(store);
    const b = new SessionCache(store);
    const mine = await a.load(ID);
    await b.append(await b.load(ID), [enqueue('other'), enqueue('both')]);
    const after = await a.append(mine, [enqueue('both'), enqueue('only-mine')]);
    const enqueued = (await store.read(ID)).flatMap((e) => (e.type === 'inbox/enqueue' ? [e.messageId] : []));
    expect(enqueued).toEqual(['f1', 'other', 'both', 'only-mine']);
    expect(after.head).toBe(await store.head(ID));
  });

  it('still refuses a race between two step writers: SEQ_CONFLICT, nothing written', async () => {
    const a = new SessionCache(store);
    const b = new SessionCache(store);
    const first = await a.load(ID);
    await b.append(await b.load(ID), [answer]);
    const head = await store.head(ID);
    // (The same slot would be a lost race, answered with the winner's event: another slot is a conflict.)
    const refused = await a.append(first, [{ type: 'step/end', at, turn: 1, step: 1 }]).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(DhError);
    expect((refused as DhError).code).toBe('SEQ_CONFLICT');
    expect(await store.head(ID)).toBe(head);
  });

  it('in one process, serializes the two so neither appends behind the other', async () => {
    // A store whose first commit takes a while (as over a network): without the cache's per-session order the
    // second writer would append behind the first one's rows before they are stored (SEQ_GAP).
    const slow = Object.create(store) as SqliteSessionStore;
    let commits = 0;
    slow.append = async (...args) => {
      if (commits++ === 0) await new Promise((resolve) => setTimeout(resolve, 100));
      return store.append(...args);
    };
    const cache = new SessionCache(slow);
    const step = await cache.load(ID);
    // Started together: the answer's append and a load + append of two messages.
    const [afterStep] = await Promise.all([
      cache.append(step, [answer]),
      (async () => {
        const inbox = await cache.load(ID);
        return cache.append(inbox, [enqueue('s1')]);
      })(),
    ]);
    const stored = await store.read(ID);
    expect(
      stored
        .slice(-2)
        .map((e) => e.type)
        .sort(),
    ).toEqual(['assistant/message', 'inbox/enqueue']);
    // The step's session (the cached copy both used) holds both, as stored.
    const latest = await cache.load(ID);
    expect(latest.events.map((e) => e.key)).toEqual(stored.map((e) => e.key));
    expect(afterStep.head).toBeLessThanOrEqual(latest.head);
  });
});
