// The chain part of auditSession on a real SQLite store: each kind of hand-forged row is found at its seq
// (with DH_LOG_KEY even when the forger recomputed the whole chain), a fork's anchor is checked against
// its parent, and a log older than the chain is reported as unchained rather than failed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NO_KEY_LIMIT, TAIL_LIMIT, uncheckedMacsLimit } from '../../src/audit/audit-chain.js';
import { auditSession } from '../../src/audit/audit-session.js';
import { forkAnchor, createSessionFromLog } from '../../src/operations/session-transfer.js';
import { forkEvents, Session } from '../../src/core/index.js';
import { ROOT_ANCHOR } from '../../src/stores/log-chain.js';
import { LogKey } from '../../src/stores/log-key.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { FORGERIES, forgeStoredRows, rechained } from '../helpers/forge-log.js';
import { standardLog } from './audited-log.js';

const KEY = new LogKey(new Uint8Array(32).fill(42));

describe('auditSession: the hash chain', () => {
  let dir: string;
  let path: string;
  let store: SqliteSessionStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'dh-audit-chain-'));
    path = join(dir, 'sessions.db');
    store = SqliteSessionStore.open(path, { logKey: KEY });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function write(sessionId: string) {
    const events = await standardLog(sessionId);
    await store.create(sessionId, { createdAt: 1 });
    await store.append(sessionId, 0, events);
    return events;
  }

  it('passes a clean log, with and without the key, and says what goes unchecked without it', async () => {
    await write('clean');
    const keyed = await auditSession({ store, sessionId: 'clean', logKey: KEY });
    expect(keyed.ok).toBe(true);
    expect(keyed.summary.chain).toMatchObject({
      status: 'ok',
      links: 37,
      keyId: KEY.keyId,
      unchained: null,
      broken: null,
      anchor: 'root',
      limits: [TAIL_LIMIT],
    });
    const plain = await auditSession({ store, sessionId: 'clean' });
    expect(plain.ok).toBe(true);
    // Its rows carry MACs: the report names the key that would check them and the variable to set.
    expect(plain.summary.chain).toMatchObject({
      status: 'ok',
      keyId: null,
      limits: [NO_KEY_LIMIT, uncheckedMacsLimit([KEY.keyId]), TAIL_LIMIT],
    });
    expect(uncheckedMacsLimit([KEY.keyId])).toContain('set DH_LOG_KEY');
  });

  for (const forgery of FORGERIES) {
    it(`finds ${forgery.name} at seq ${forgery.seq}: with the key even under a recomputed chain`, async () => {
      forgeStoredRows(path, 'full', forgery.forge(await write('full')), true);
      forgeStoredRows(path, 'kept', forgery.forge(await write('kept')), false);

      const full = await auditSession({ store, sessionId: 'full', logKey: KEY });
      // Every row loads and the log is structurally valid: only the chain and its MACs can tell.
      expect([full.summary.log.ok, full.summary.structure.ok]).toEqual([true, true]);
      expect(full.summary.chain?.broken).toEqual({
        seq: forgery.seq,
        problem: expect.stringContaining(`MAC does not verify under key id ${KEY.keyId}`) as unknown,
      });
      expect(full.failures).toContain(`chain: seq ${forgery.seq}: ${full.summary.chain?.broken?.problem}`);
      // Without the key a full recompute is what the chain cannot see (the report says so).
      const unkeyed = await auditSession({ store, sessionId: 'full' });
      expect(unkeyed.summary.chain).toMatchObject({
        status: 'ok',
        limits: [NO_KEY_LIMIT, uncheckedMacsLimit([KEY.keyId]), TAIL_LIMIT],
      });

      for (const key of [KEY, undefined]) {
        const kept = await auditSession({ store, sessionId: 'kept', ...(key ? { logKey: key } : {}) });
        expect(kept.ok).toBe(false);
        expect(kept.summary.chain?.broken?.seq).toBe(forgery.seq);
        expect(kept.summary.chain?.broken?.problem).toContain('does not follow from the event and the link before it');
      }
    });
  }

  it("checks a fork's anchor against the parent's chain at the fork point", async () => {
    const parentEvents = await write('parent');
    const parent = new Session('parent', parentEvents);
    const child = forkEvents(parent, { sessionId: 'child', atSeq: 17, at: 99 });
    const anchor = await forkAnchor(store, 'parent', 17);
    expect(anchor).toBe((await store.readChain('parent', 16, 17)).links[0]?.chain);
    await createSessionFromLog(store, 'child', child, { chainAnchor: anchor! });
    const report = await auditSession({ store, sessionId: 'child', logKey: KEY });
    expect(report.ok).toBe(true);
    expect(report.summary.chain).toMatchObject({ status: 'ok', anchor: 'fork-parent-checked' });

    // A forger who re-anchors the fork at the root and recomputes its chain: the anchor no longer binds the parent.
    const db = new Database(path);
    try {
      db.prepare('UPDATE sessions SET chain_anchor = ? WHERE session_id = ?').run(ROOT_ANCHOR, 'child');
    } finally {
      db.close();
    }
    forgeStoredRows(path, 'child', child, true);
    const reanchored = await auditSession({ store, sessionId: 'child' });
    expect(reanchored.summary.chain?.broken).toEqual({
      seq: 0,
      problem: expect.stringContaining(`is not the chain digest of parent "parent" at seq 16`) as unknown,
    });
    expect(rechained(child)[0]).toBe((await store.readChain('child', 0, 1)).links[0]?.chain);
  });

  it('notes a fork whose parent is not in the store', async () => {
    const parent = new Session('elsewhere', await standardLog('elsewhere'));
    const child = forkEvents(parent, { sessionId: 'orphan', atSeq: 17, at: 99 });
    await createSessionFromLog(store, 'orphan', child, { chainAnchor: `sha256:${'ab'.repeat(32)}` });
    const report = await auditSession({ store, sessionId: 'orphan' });
    expect(report.summary.chain).toMatchObject({ status: 'ok', anchor: 'fork-parent-absent' });
    expect(report.summary.chain?.limits).toContain(
      'the fork anchor is not checked: the parent session is not in this store',
    );
  });

  it('reports a log written before the chain as unchained without a key, and fails it with one', async () => {
    const events = await write('legacy');
    const db = new Database(path);
    try {
      db.prepare('UPDATE events SET chain = NULL, mac = NULL WHERE session_id = ?').run('legacy');
      db.prepare('UPDATE sessions SET chain_anchor = NULL WHERE session_id = ?').run('legacy');
    } finally {
      db.close();
    }
    const plain = await auditSession({ store, sessionId: 'legacy' });
    expect(plain.ok).toBe(true);
    expect(plain.summary.chain).toMatchObject({ status: 'ok', unchained: { from: 0, to: events.length - 1 } });
    // Rows without MACs name no key to set.
    expect(plain.summary.chain?.limits).toEqual([NO_KEY_LIMIT, TAIL_LIMIT]);
    const keyed = await auditSession({ store, sessionId: 'legacy', logKey: KEY });
    expect(keyed.ok).toBe(false);
    expect(keyed.summary.chain?.broken).toEqual({
      seq: 0,
      problem: expect.stringContaining('audit without DH_LOG_KEY for a chain-only check') as unknown,
    });
  });
});
