// The outbound gate against a real SQLite store. It rebuilds every request from a fresh read of every
// row, so a row changed behind the live session's back stops the request, whether the gate has seen
// the session before (its memory of verified rows) or not; and a gate that remembers agrees with a cold one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { buildSessionRequest, ErrorCode, eventDigest, Session, type SessionEvent } from '../../src/core/index.js';
import { OutboundGate } from '../../src/activities/outbound-gate.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
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
  const row = raw.prepare("SELECT seq, body FROM events WHERE type = 'tool/result' LIMIT 1").get() as {
    seq: number;
    body: string;
  };
  const edited = { ...(JSON.parse(row.body) as Record<string, unknown>), output: 'tampered output' } as SessionEvent;
  raw.prepare('UPDATE events SET body = ? WHERE seq = ?').run(JSON.stringify(edited), row.seq);
  if (fixDigest) raw.prepare('UPDATE events SET digest = ? WHERE seq = ?').run(eventDigest(edited), row.seq);
  raw.close();
  return row.seq;
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
});
