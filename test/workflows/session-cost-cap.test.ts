// The session cost cap on the real stack: each answer's cost is logged with its price; the call whose
// worst case (prompt bytes, the whole output limit) would pass the cap is never sent — the provider's
// recorded requests prove it — and its turn ends `budget` naming the cap and the estimate. A model with no
// price under a cap is refused too: the cap fails closed.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/core/index.js';
import { auditCosts } from '../../src/audit/audit-costs.js';
import { auditSession } from '../../src/audit/audit-session.js';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import { FleetLimiter } from '../../src/limiter/fleet-limiter.js';
import { SqliteLimiterStore } from '../../src/limiter/sqlite-limiter-store.js';
import { costOf } from '../../src/providers/pricing.js';
import { followupSignal } from '../../src/shared/session-messages.js';
import { startHarness, TEST_MODEL, waitForState, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';

const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [`${e.turn}:${e.reason}:${e.error?.code ?? '-'}`] : []));
const chatCalls = (h: Harness) => h.provider.requests().filter((r) => r.path.endsWith('/chat/completions'));

// Dear on purpose, so a few thousand tokens are dollars: the arithmetic stays readable.
const PRICE = { inputPerMillion: 1_000, cachedInputPerMillion: 100, outputPerMillion: 2_000 };

describe('a session cost cap', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      // The first answer reports 50,000 prompt tokens: $50 at this price.
      script: { replies: [{ text: 'an expensive answer', usage: { prompt_tokens: 50_000, completion_tokens: 10 } }] },
      // No output limit is configured, so the worst case takes the header's context window (128,000 tokens):
      // $256 of output alone. $300 admits the first call ($0 + ~$257) and not the second ($50 + ~$257).
      fleet: { pricing: { [`scripted/${TEST_MODEL}`]: PRICE }, sessionCostCapUsd: 300 },
    });
  });
  afterAll(async () => h?.stop());

  it('logs each answer with its cost, and sends no call that could pass the cap', async () => {
    const handle = await h.start('capped');
    await handle.signal(followupSignal, { content: 'first' });
    const first = await waitForTurnEnd(h.store, 'capped', 1);
    const answer = first.find((e) => e.type === 'assistant/message');
    if (answer?.type !== 'assistant/message' || !answer.usage) throw new Error('no answer with usage logged');
    // The logged cost is the usage at the logged price: an audit re-derives it exactly.
    expect(answer.cost).toEqual({ usd: costOf(answer.usage, PRICE), price: PRICE });
    expect(answer.cost?.usd).toBeCloseTo(50.02, 6);

    await handle.signal(followupSignal, { content: 'second' });
    const events = await waitForTurnEnd(h.store, 'capped', 2);
    expect(turnEnds(events)).toEqual(['1:completed:-', '2:budget:COST_CAP_EXCEEDED']);
    const end = events.findLast((e) => e.type === 'turn/end');
    expect(end?.type === 'turn/end' && end.error?.message).toMatch(
      /the session cost cap \(\$300\) would be exceeded: spent \$50\.02, and this call may cost up to \$2\d\d\.\d+ \(\d+ prompt tokens at most \+ 128000 output tokens/,
    );
    // Nothing of turn 2 reached the provider, and the log says nothing was sent.
    expect(chatCalls(h)).toHaveLength(1);
    expect(events.filter((e) => e.type === 'request/sent').map((e) => 'turn' in e && e.turn)).toEqual([1]);
    // The step opened for it is closed: no dangling step.
    const turn2 = events.filter((e) => 'turn' in e && e.turn === 2).map((e) => e.type);
    expect(turn2).toContain('step/end');
    const state = await waitForState(handle, (s) => s.status === 'idle' && s.lastTurnEnd?.turn === 2);
    expect(state.lastTurnEnd).toMatchObject({ reason: 'budget', errorCode: 'COST_CAP_EXCEEDED' });
    expect((await checkHistoryMirror(h.client, h.store, 'capped')).ok).toBe(true);

    // The audit re-derives the logged cost from the usage and price; a cost that is not is named.
    const report = await auditSession({ store: h.store, sessionId: 'capped' });
    expect(report.ok).toBe(true);
    expect(report.summary.cost).toMatchObject({ priced: 1, unpriced: 0, mismatched: [] });
    expect(report.summary.cost.usd).toBe(answer.cost?.usd);
    const forged = events.map((e) =>
      e.type === 'assistant/message' && e.cost ? { ...e, cost: { ...e.cost, usd: e.cost.usd / 2 } } : e,
    );
    expect(auditCosts(forged).mismatched).toEqual(['1.1']);
  });
});

describe("a tenant's cost cap across its sessions", () => {
  let h: Harness;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dh-tenant-cap-'));
    const limiter = new FleetLimiter({
      store: SqliteLimiterStore.open(join(dir, 'sessions.limits.db')),
      bucket: 'scripted:test',
      quota: {},
      tenants: { acme: { costCapUsd: 300 } },
    });
    h = await startHarness({
      script: { replies: [{ text: 'an expensive answer', usage: { prompt_tokens: 50_000, completion_tokens: 10 } }] },
      fleet: { pricing: { [`scripted/${TEST_MODEL}`]: PRICE }, limiter, tenant: 'acme' },
    });
  });
  afterAll(async () => h?.stop());

  it("refuses another session's call once the tenant's spending and holds leave no room for its worst case", async () => {
    const first = await h.start('acme-1');
    await first.signal(followupSignal, { content: 'first' });
    expect(turnEnds(await waitForTurnEnd(h.store, 'acme-1', 1))).toEqual(['1:completed:-']);
    // acme-1 spent $50.02; acme-2's call may cost ~$257: together past the tenant's $300.
    const second = await h.start('acme-2');
    await second.signal(followupSignal, { content: 'second' });
    const events = await waitForTurnEnd(h.store, 'acme-2', 1);
    expect(turnEnds(events)).toEqual(['1:budget:COST_CAP_EXCEEDED']);
    const end = events.findLast((e) => e.type === 'turn/end');
    expect(end?.type === 'turn/end' && end.error?.message).toMatch(
      /the tenant "acme" cost cap \(\$300\) would be exceeded: its sessions committed \$50\.02, and this call may cost up to/,
    );
    expect(chatCalls(h)).toHaveLength(1);
  });
});

describe('a cost cap with no price for the model', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      script: { replies: [{ text: 'never sent' }] },
      fleet: { pricing: {}, sessionCostCapUsd: 1_000 },
    });
  });
  afterAll(async () => h?.stop());

  it('refuses the first call, naming the missing price', async () => {
    const handle = await h.start('unpriced');
    await handle.signal(followupSignal, { content: 'hello' });
    const events = await waitForTurnEnd(h.store, 'unpriced', 1);
    expect(turnEnds(events)).toEqual(['1:budget:COST_CAP_EXCEEDED']);
    const end = events.findLast((e) => e.type === 'turn/end');
    expect(end?.type === 'turn/end' && end.error?.message).toContain(`"scripted/${TEST_MODEL}" has no price`);
    expect(chatCalls(h)).toHaveLength(0);
  });
});
