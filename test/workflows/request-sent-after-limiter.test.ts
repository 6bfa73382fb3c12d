// A step that waits in the fleet limiter logs its `request/sent` when the request goes out, after the wait: the
// console's waterfall counts the wait as `wait` and only the call as `model`. A message that arrives meanwhile
// is logged before it, and the log still audits (each request re-derives its digest) and mirrors its history.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/core/index.js';
import { auditSession } from '../../src/audit/audit-session.js';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import { sessionTimeline } from '../../src/console/session-timeline.js';
import { FleetLimiter } from '../../src/limiter/fleet-limiter.js';
import { SqliteLimiterStore } from '../../src/limiter/sqlite-limiter-store.js';
import { followupSignal } from '../../src/shared/session-messages.js';
import { waitForLog } from '../helpers/scenario-runtime.js';
import { startHarness, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';

const BUCKET = 'scripted:sent-after-wait';

describe('request/sent after a wait in the fleet limiter', () => {
  let h: Harness;
  let limits: SqliteLimiterStore;
  beforeAll(async () => {
    limits = SqliteLimiterStore.open(join(mkdtempSync(join(tmpdir(), 'dh-sent-after-wait-')), 'limits.db'));
    // One call in flight on the account: while the test holds that lease, the step waits in the limiter.
    const limiter = new FleetLimiter({
      store: limits,
      bucket: BUCKET,
      quota: { requestsPerMinute: 600, maxConcurrent: 1 },
      pollMs: 20,
    });
    h = await startHarness({ script: { replies: [], default: { text: 'ok.' } }, fleet: { limiter } });
  });
  afterAll(async () => {
    await h?.stop();
    await limits?.close();
  });

  it('is logged when the request went out, and the waterfall shows the wait before it', async () => {
    expect(await limits.lease(BUCKET, 'another-call', 1, 120_000)).toBe(true);
    const handle = await h.start('waits');
    await handle.signal(followupSignal, { content: 'first', messageId: 'first' });
    await waitForLog(h.store, 'waits', (events) => events.some((e) => e.type === 'step/start'), 'the step');
    // A message arriving while the step waits is logged at once, by the workflow's own append.
    await handle.signal(followupSignal, { content: 'second', messageId: 'second' });
    await waitForLog(
      h.store,
      'waits',
      (events) => events.some((e) => e.type === 'inbox/enqueue' && e.messageId === 'second'),
      'the second message',
    );
    const freedAt = Date.now();
    await limits.releaseLease(BUCKET, 'another-call');

    const events = await waitForTurnEnd(h.store, 'waits', 2);
    const of = <T extends SessionEvent['type']>(type: T, turn: number) =>
      events.find((e): e is Extract<SessionEvent, { type: T }> => e.type === type && 'turn' in e && e.turn === turn);
    const start = of('step/start', 1);
    const sent = of('request/sent', 1);
    const enqueued = events.find((e) => e.type === 'inbox/enqueue' && e.messageId === 'second');
    if (!start || !sent || !enqueued) throw new Error('the first step, its request/sent or the message is missing');
    const received = h.provider.requests().find((r) => r.path.endsWith('/chat/completions'))?.receivedAt ?? 0;
    // Sent once the limiter let it go, and logged before the provider had it.
    expect(sent.at).toBeGreaterThanOrEqual(freedAt);
    expect(sent.at).toBeLessThanOrEqual(received);
    expect(enqueued.seq).toBeLessThan(sent.seq);

    // The waterfall: `wait` runs from the step's start to the send, covering the limiter's time; `model` after.
    const step = sessionTimeline('waits', events).turns[0]?.steps[0];
    const wait = step?.phases.find((p) => p.kind === 'wait');
    const model = step?.phases.find((p) => p.kind === 'model');
    expect(wait?.endMs).toBe(sent.at - start.at);
    expect(start.at + (wait?.endMs ?? 0)).toBeGreaterThanOrEqual(freedAt);
    expect(model?.startMs).toBe(wait?.endMs);

    const report = await auditSession({ store: h.store, sessionId: 'waits' });
    expect(report.failures).toEqual([]);
    expect(report.summary.digests.ok).toBe(2);
    expect((await checkHistoryMirror(h.client, h.store, 'waits')).ok).toBe(true);
  });
});
