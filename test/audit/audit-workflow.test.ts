// The audit of sessions run by the real workflow (scripted provider, SQLite, Temporal): digests
// re-derive, the history mirrors the log, and the cache simulation predicts what the provider reported.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditSession } from '../../src/audit/audit-session.js';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import { followupSignal } from '../../src/shared/session-messages.js';
import { echoTool } from '../helpers/test-tools.js';
import { startHarness, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { forgeStoredRows } from '../helpers/forge-log.js';
import { inboxEnqueue } from '../helpers/event-builders.js';
import { tamperToolResult } from './audited-log.js';

const LONG = 'Background: '.concat('the quick brown fox jumps over the lazy dog. '.repeat(40));

describe('auditSession over a workflow-run session', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'echo' },
            text: 'Echoing.',
            toolCalls: [{ id: 'call_1', name: 'echo', arguments: '{"text":"hi"}' }],
          },
          { match: { lastUserContains: 'echo' }, text: 'The echo said hi.' },
          {
            match: { lastUserContains: 'tamper' },
            text: 'Echoing again.',
            toolCalls: [{ id: 'call_2', name: 'echo', arguments: '{"text":"original"}' }],
          },
          { match: { lastUserContains: 'tamper' }, text: 'The echo said original.' },
          { match: { lastUserContains: 'Background' }, text: 'Noted the background.' },
          { match: { lastUserContains: 'more' }, text: 'More, as asked.', repeat: 3 },
        ],
      },
      tools: [echoTool],
    });
  });
  afterAll(async () => h?.stop());

  it('is clean, mirrors the history, and expects exactly the cache reads the provider reported', async () => {
    const handle = await h.start('audited');
    await handle.signal(followupSignal, { content: LONG });
    await waitForTurnEnd(h.store, 'audited', 1);
    await handle.signal(followupSignal, { content: 'please echo hi' });
    await waitForTurnEnd(h.store, 'audited', 2);
    await handle.signal(followupSignal, { content: 'one more' });
    await waitForTurnEnd(h.store, 'audited', 3);

    const report = await auditSession({ store: h.store, sessionId: 'audited', profile: h.profile, client: h.client });
    expect(report.failures).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.rows.map((r) => r.id)).toEqual(['1.1', '2.1', '2.2', '3.1']);
    expect(report.rows.every((r) => r.profileSource === 'given')).toBe(true);
    expect(report.summary.mirror).toMatchObject({ status: 'ok', report: { ok: true } });
    // The activities' receipts carried the store's chain heads, and the history agrees with them.
    if (report.summary.mirror?.status !== 'ok') throw new Error('no mirror report');
    expect(report.summary.mirror.report.chains).toBeGreaterThan(3);
    expect(report.summary.chain).toMatchObject({ status: 'ok', unchained: null });
    expect(report.summary.prefix).toMatchObject({ ratio: 1, broken: [] });
    // The scripted provider runs the same simulator over the same bodies: predictions are exact.
    expect(report.rows.map((r) => r.expectedCacheRead)).toEqual(report.rows.map((r) => r.reportedCacheRead));
    expect(report.summary.cache.differing).toEqual([]);
    expect(report.summary.cache.reported).toBeGreaterThan(0);

    // Offline, without the worker's profile: a generic profile from the header derives the same bodies.
    const offline = await auditSession({ store: h.store, sessionId: 'audited' });
    expect(offline.ok).toBe(true);
    expect(offline.rows.every((r) => r.profileSource === 'generic' && r.digestOk)).toBe(true);
    expect(offline.summary.mirror).toBeNull();
  });

  it("waits for a running session's tail to reach its history, and names a tail that never does", async () => {
    // An append commits in the store before its activity's result is in the history: a check right after a
    // turn may find the tail unrecorded, and waits for it. An event appended behind the workflow's back
    // never reaches the history: after the wait, the mirror names it.
    const handle = await h.start('audited-tail');
    await handle.signal(followupSignal, { content: 'more, once' });
    const events = await waitForTurnEnd(h.store, 'audited-tail', 1);
    expect((await checkHistoryMirror(h.client, h.store, 'audited-tail')).problem).toBeNull();
    const head = events.length;
    await h.store.append('audited-tail', head, [inboxEnqueue(head, 'forged-tail', 'not sent by anyone')]);
    const started = Date.now();
    const mirror = await checkHistoryMirror(h.client, h.store, 'audited-tail', { settleMs: 600 });
    expect(mirror.problem).toBe(`seq ${head} (inbox/enqueue) is in the log but in no workflow history`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(600);
  });

  it('fails on a tampered row: in the re-derivation and in the history mirror', async () => {
    const handle = await h.start('audited-tampered');
    await handle.signal(followupSignal, { content: 'tamper with this' });
    await waitForTurnEnd(h.store, 'audited-tampered', 1);
    tamperToolResult(h.storePath, 'audited-tampered', true);
    const report = await auditSession({ store: h.store, sessionId: 'audited-tampered', client: h.client });
    expect(report.ok).toBe(false);
    expect(report.summary.digests.mismatched).toEqual(['1.2']);
    // The receipt in the history carries the original event digest: the mirror disagrees too.
    expect(report.summary.mirror).toMatchObject({ status: 'mismatch' });
  });

  it('catches in the history mirror an edited timestamp whose chain was recomputed, which offline it cannot', async () => {
    const handle = await h.start('audited-retimed');
    await handle.signal(followupSignal, { content: 'more please' });
    await waitForTurnEnd(h.store, 'audited-retimed', 1);
    const events = await h.store.read('audited-retimed');
    const answer = events.find((e) => e.type === 'assistant/message');
    if (answer === undefined) throw new Error('no answer');
    // The digest leaves `at` out, so the history's digests still agree; only the chain covers it.
    const forged = events.map((e) => (e.seq === answer.seq ? { ...e, at: e.at + 3_600_000 } : e));
    forgeStoredRows(h.storePath, 'audited-retimed', forged, true);
    const offline = await auditSession({ store: h.store, sessionId: 'audited-retimed' });
    expect(offline.summary.chain).toMatchObject({ status: 'ok', keyId: null });
    const report = await auditSession({ store: h.store, sessionId: 'audited-retimed', client: h.client });
    expect(report.ok).toBe(false);
    if (report.summary.mirror?.status !== 'mismatch') throw new Error(JSON.stringify(report.summary.mirror));
    expect(report.summary.mirror.report.problem).toMatch(
      /^seq \d+: the history recorded chain digest sha256:\w+, the store holds sha256:\w+ \(the log was rewritten at or before seq \d+, after seq \d+\)$/,
    );
  });

  it('reports a session with no workflow as not mirrored, without failing', async () => {
    const events = await h.store.read('audited');
    await h.store.create('audited-copy', { createdAt: 1 });
    await h.store.append(
      'audited-copy',
      0,
      events.map((e) => (e.type === 'session/start' ? { ...e, sessionId: 'audited-copy' } : e)),
    );
    const report = await auditSession({ store: h.store, sessionId: 'audited-copy', client: h.client });
    expect(report.ok).toBe(true);
    expect(report.summary.mirror).toMatchObject({ status: 'no-workflow' });
  });
});
