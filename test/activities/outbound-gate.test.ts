// The outbound gate against a real SQLite store. It rebuilds every request from a fresh read of every
// row, so a row changed behind the live session's back stops the request, whether the gate has seen
// the session before (its memory of verified rows) or not; and a gate that remembers agrees with a cold one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  buildSessionRequest,
  deepFreeze,
  ErrorCode,
  eventDigest,
  InvalidEventError,
  isDeepFrozen,
  LogStructureError,
  Session,
  type BuiltRequest,
  type SessionEvent,
} from '../../src/core/index.js';
import { OutboundGate } from '../../src/activities/outbound-gate.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { VerifiedRows } from '../../src/stores/verified-rows.js';
import { LogDriver, logCommandArbitrary } from '../helpers/log-generator.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempStore(): { store: SqliteSessionStore; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'dh-gate-'));
  dirs.push(dir);
  const path = join(dir, 'sessions.db');
  return { store: SqliteSessionStore.open(path), path };
}

async function storedSession() {
  const { store, path } = tempStore();
  const driver = new LogDriver('s-gate-store').run([
    { kind: 'send', origin: 'followup', text: 'hello' },
    { kind: 'step', toolCalls: 1, text: 'reading', changeHeader: false, skipLastTool: false },
    { kind: 'step', toolCalls: 0, text: '', changeHeader: false, skipLastTool: false },
  ]);
  // Leave the last step open and pending, as the loop is right before sending.
  const events = driver.session.events.filter(
    (e, i, all) => !(i >= all.length - 2 && (e.type === 'assistant/message' || e.type === 'step/end')),
  );
  await store.create('s-gate-store', { createdAt: 1 });
  await store.append('s-gate-store', 0, events);
  const live = new Session('s-gate-store', events);
  return { store, path, request: buildSessionRequest(live) };
}

/** Rewrites the first tool result's output behind the store's back; optionally fixes its digest column. */
function tamper(path: string, fixDigest: boolean): number {
  const raw = new Database(path);
  const row = raw.prepare("SELECT seq FROM events WHERE type = 'tool/result' LIMIT 1").get() as { seq: number };
  raw.close();
  rewriteRow(path, row.seq, (event) => ({ ...event, output: 'tampered output' }), fixDigest);
  return row.seq;
}

/** Rewrites the body of the row at `seq` behind the store's back; optionally fixes its digest column. Returns the old body. */
function rewriteRow(
  path: string,
  seq: number,
  edit: (event: Record<string, unknown>) => Record<string, unknown>,
  fixDigest: boolean,
): string {
  const raw = new Database(path);
  const { body } = raw.prepare('SELECT body FROM events WHERE seq = ?').get(seq) as { body: string };
  const edited = edit(JSON.parse(body) as Record<string, unknown>) as SessionEvent;
  raw.prepare('UPDATE events SET body = ? WHERE seq = ?').run(JSON.stringify(edited), seq);
  if (fixDigest) raw.prepare('UPDATE events SET digest = ? WHERE seq = ?').run(eventDigest(edited), seq);
  raw.close();
  return body;
}

function restoreRow(path: string, seq: number, body: string): void {
  const raw = new Database(path);
  raw.prepare('UPDATE events SET body = ? WHERE seq = ?').run(body, seq);
  raw.close();
}

describe('OutboundGate', () => {
  it('passes a request the stored log derives, cold and again warm', async () => {
    const { store, request } = await storedSession();
    const gate = new OutboundGate(store);
    await expect(gate.verify(request)).resolves.toEqual(request);
    await expect(gate.verify(request)).resolves.toEqual(request);
    await store.close();
  });

  for (const warm of [false, true]) {
    const which = warm ? 'a gate that verified this session before' : 'a cold gate';
    it(`${which}: refuses when a stored row was rewritten consistently (body and digest)`, async () => {
      const { store, path, request } = await storedSession();
      const gate = new OutboundGate(store);
      if (warm) await gate.verify(request);
      tamper(path, true);
      await expect(gate.verify(request)).rejects.toMatchObject({
        code: ErrorCode.RequestDiverges,
        details: { where: 'messages[3]' },
      });
      // A warm gate noticed the changed row and rebuilt from the read rather than advancing.
      expect(gate.counts).toEqual(warm ? { cold: 1, advanced: 0, rebuilt: 1 } : { cold: 1, advanced: 0, rebuilt: 0 });
      await store.close();
    });

    it(`${which}: refuses when a stored body no longer matches its digest (the load fails, naming the seq)`, async () => {
      const { store, path, request } = await storedSession();
      const gate = new OutboundGate(store);
      if (warm) await gate.verify(request);
      const seq = tamper(path, false);
      await expect(gate.verify(request)).rejects.toMatchObject({
        code: ErrorCode.InvalidEvent,
        details: { sessionId: 's-gate-store', seq },
      });
      await store.close();
    });
  }

  it('a row rewritten to the same event in other bytes (key order) is re-validated and still passes', async () => {
    const { store, path, request } = await storedSession();
    const gate = new OutboundGate(store);
    await gate.verify(request);
    const raw = new Database(path);
    const row = raw.prepare("SELECT seq, body FROM events WHERE type = 'tool/result' LIMIT 1").get() as {
      seq: number;
      body: string;
    };
    const reordered = Object.fromEntries(Object.entries(JSON.parse(row.body) as object).reverse());
    raw.prepare('UPDATE events SET body = ? WHERE seq = ?').run(JSON.stringify(reordered), row.seq);
    raw.close();
    await expect(gate.verify(request)).resolves.toEqual(request);
    await store.close();
  });

  it('forgets the least recently verified session beyond its bound, and still verifies it afterwards', async () => {
    const { store, request } = await storedSession();
    const gate = new OutboundGate(store, 0);
    await expect(gate.verify(request)).resolves.toEqual(request);
    await expect(gate.verify(request)).resolves.toEqual(request);
    await store.close();
  });

  it('property: step after step, a warm gate returns exactly what a cold gate returns, and both what the log derives', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(logCommandArbitrary, { minLength: 1, maxLength: 40 }), async (commands) => {
        const { store } = tempStore();
        try {
          const driver = new LogDriver('s-prop').run([
            { kind: 'send', origin: 'followup', text: 'go' },
            { kind: 'step', toolCalls: 1, text: 'first', changeHeader: false, skipLastTool: false },
            ...commands,
          ]);
          const events = driver.session.events;
          await store.create('s-prop', { createdAt: 1 });
          const warm = new OutboundGate(store);
          let stored = 0;
          for (const { request, head } of driver.steps) {
            // Steps are recorded in log order, each at a longer log than the one before.
            expect(head).toBeGreaterThan(stored);
            await store.append('s-prop', stored, events.slice(stored, head));
            stored = head;
            const fromWarm = await warm.verify(request);
            const fromCold = await new OutboundGate(store).verify(request);
            expect(fromWarm).toEqual(request);
            expect(fromCold).toEqual(fromWarm);
          }
          // Nothing changed behind its back: after the first step it only ever advanced.
          expect(warm.counts).toEqual({ cold: 1, advanced: driver.steps.length - 1, rebuilt: 0 });
        } finally {
          await store.close();
        }
      }),
      { numRuns: 40 },
    );
  });

  it('a row changed and remembered by a read that then failed still makes the next read rebuild, and refuse', async () => {
    const { store, path, request } = await storedSession();
    const gate = new OutboundGate(store);
    await gate.verify(request);
    // Row A changes consistently (its new event is validated and remembered), then the read fails on row B.
    tamper(path, true);
    const last = (await store.head('s-gate-store')) - 1;
    const body = rewriteRow(path, last, (event) => ({ ...event, key: `${String(event.key)}x` }), false);
    await expect(gate.verify(request)).rejects.toMatchObject({
      code: ErrorCode.InvalidEvent,
      details: { seq: last },
    });
    // B is put back: A is now a memo hit from the failed read, not a row this read validated.
    restoreRow(path, last, body);
    await expect(gate.verify(request)).rejects.toMatchObject({
      code: ErrorCode.RequestDiverges,
      details: { where: 'messages[3]' },
    });
    expect(gate.counts).toEqual({ cold: 1, advanced: 0, rebuilt: 1 });
    await store.close();
  });

  it('a request equal to the rebuild in other objects passes; one differing in a message compared equal before is refused', async () => {
    const { store, request } = await storedSession();
    const gate = new OutboundGate(store);
    await gate.verify(request);
    await gate.verify(request); // the pairs of messages are now known equal
    const copy = deepFreeze(JSON.parse(JSON.stringify(request)) as BuiltRequest);
    await expect(gate.verify(copy)).resolves.toEqual(request);
    // Equal only canonically (a key set to undefined is not serialized): passes, as it always did.
    const withUndefined = deepFreeze({
      ...request,
      messages: request.messages.map((m, i) => (i === 1 ? { ...m, reasoning: undefined } : m)),
    });
    await expect(gate.verify(withUndefined)).resolves.toEqual(request);
    for (const edited of [
      { ...request, messages: request.messages.map((m, i) => (i === 3 ? { ...m, content: 'edited' } : m)) },
      { ...request, messages: request.messages.map((m, i) => (i === 3 ? { ...m, extra: 1 } : m)) },
      { ...request, messages: [...request.messages].reverse() },
    ]) {
      await expect(gate.verify(deepFreeze(edited))).rejects.toMatchObject({
        code: ErrorCode.RequestDiverges,
        details: { where: expect.stringMatching(/^messages\[\d+\]$/) },
      });
    }
    expect(gate.counts).toEqual({ cold: 1, advanced: 6, rebuilt: 0 });
    await store.close();
  });
});

describe('admitting the events a read validated', () => {
  it('a read through the memo returns its freshly validated events deep-frozen, and names exactly those', async () => {
    const { store, path } = await storedSession();
    const verified = new VerifiedRows();
    verified.beginRead();
    const first = await store.read('s-gate-store', 0, undefined, { verified });
    expect(first.every((event) => isDeepFrozen(event) && verified.validatedInRead.has(event))).toBe(true);
    expect(verified.validatedInRead.size).toBe(first.length);
    // Unchanged rows are memo hits: the same objects, and none of them validated by this read.
    verified.beginRead();
    const second = await store.read('s-gate-store', 0, undefined, { verified });
    expect(second.every((event, i) => event === first[i])).toBe(true);
    expect(verified.validatedInRead.size).toBe(0);
    // A changed row (digest fixed too) is validated again, and only it.
    const seq = tamper(path, true);
    verified.beginRead();
    const third = await store.read('s-gate-store', 0, undefined, { verified });
    expect(third[seq]).not.toBe(first[seq]);
    expect([...verified.validatedInRead]).toEqual([third[seq]]);
    expect(verified.validatedInRead.has(third[seq] as SessionEvent)).toBe(true);
    // Adopting ends the read.
    verified.adopt(third);
    expect(verified.validatedInRead.size).toBe(0);
    await store.close();
  });

  it('a Session admits them without parsing again, but still checks their place and the structure', async () => {
    const { store } = await storedSession();
    const verified = new VerifiedRows();
    verified.beginRead();
    const events = await store.read('s-gate-store', 0, undefined, { verified });
    const validated = verified.validatedInRead;
    const session = new Session('s-gate-store', events, { validated });
    // The very objects the read validated: no second copy.
    expect(session.events.every((event, i) => event === events[i])).toBe(true);
    expect(buildSessionRequest(session)).toEqual(buildSessionRequest(new Session('s-gate-store', events)));

    // Structure: a second turn/start while the turn is open, schema-valid and in the set, is refused.
    const turnStart = events.find((e) => e.type === 'turn/start') as SessionEvent;
    const again = deepFreeze({ ...turnStart, seq: events.length });
    expect(
      () => new Session('s-gate-store', [...events, again], { validated: new Set([...validated, again]) }),
    ).toThrow(LogStructureError);
    // Place: an event of the set standing at another seq is parsed, and reported.
    const shifted = [...events.slice(0, 3), ...events.slice(4)];
    expect(() => new Session('s-gate-store', shifted, { validated })).toThrow(InvalidEventError);
    // Only frozen members are trusted: a mutable one is parsed (and this one fails its schema).
    const loose = { ...(events[1] as SessionEvent), bogus: true };
    expect(
      () => new Session('s-gate-store', [events[0], loose], { validated: new Set([...validated, loose]) }),
    ).toThrow(InvalidEventError);
    // Anything not in the set is parsed as always.
    const unlisted = deepFreeze({ ...(events[1] as SessionEvent), bogus: true });
    expect(() => new Session('s-gate-store', [events[0], unlisted], { validated })).toThrow(InvalidEventError);
    const grown = new Session('s-gate-store', events.slice(0, 2), { validated });
    expect(() => grown.appendEvents([unlisted], { validated })).toThrow(InvalidEventError);
    await store.close();
  });
});
