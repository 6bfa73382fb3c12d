// The gate against a real store: it rebuilds from a fresh read, so a store row changed after the
// request was built (behind the live session's back) stops the request.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { buildSessionRequest, ErrorCode, eventDigest, type SessionEvent } from '../../src/core/index.js';
import { verifyOutboundRequest } from '../../src/activities/verify-outbound-request.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { LogDriver } from '../helpers/log-generator.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function storedSession() {
  const dir = mkdtempSync(join(tmpdir(), 'dh-gate-'));
  dirs.push(dir);
  const path = join(dir, 'sessions.db');
  const store = SqliteSessionStore.open(path);
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
  const { Session } = await import('../../src/core/index.js');
  const live = new Session('s-gate-store', events);
  return { store, path, request: buildSessionRequest(live) };
}

describe('verifyOutboundRequest', () => {
  it('passes a request the stored log derives', async () => {
    const { store, request } = await storedSession();
    await expect(verifyOutboundRequest(store, request)).resolves.toEqual(request);
    await store.close();
  });

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

  it('refuses when a stored row was rewritten consistently (body and digest) after the request was built', async () => {
    const { store, path, request } = await storedSession();
    tamper(path, true);
    await expect(verifyOutboundRequest(store, request)).rejects.toMatchObject({
      code: ErrorCode.RequestDiverges,
      details: { where: 'messages[3]' },
    });
    await store.close();
  });

  it('refuses when a stored body no longer matches its digest (the load fails, naming the seq)', async () => {
    const { store, path, request } = await storedSession();
    const seq = tamper(path, false);
    await expect(verifyOutboundRequest(store, request)).rejects.toMatchObject({
      code: ErrorCode.InvalidEvent,
      details: { sessionId: 's-gate-store', seq },
    });
    await store.close();
  });
});
