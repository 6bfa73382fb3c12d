// An accepted message never poisons later turns (real Temporal dev server, worker, SQLite, scripted provider): a
// message citing an attachment nobody stored, or an image for a model without vision, leaves the queue as an
// `inbox/discard` with its reason when a step claims it, never reaches a request, and the next plain-text turn
// completes. On a vision model a stored image is sent. Message text with lone surrogates is logged well-formed.
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageFate, type AttachmentRef, type SessionEvent } from '../../src/core/index.js';
import {
  compactUpdate,
  followupSignal,
  sendUpdate,
  steerSignal,
  type MessageSignalPayload,
} from '../../src/shared/session-messages.js';
import { waitForLog } from '../helpers/scenario-runtime.js';
import {
  expectProviderSawTheLog,
  startHarness,
  waitForState,
  waitForTurnEnd,
  type Harness,
} from '../helpers/session-harness.js';
import { loneSurrogatesIn } from '../helpers/well-formed-json.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
/** Valid under the message schema; no store holds it. */
const UNKNOWN: AttachmentRef = { id: `sha256:${'0'.repeat(64)}`, mediaType: 'image/png', bytes: PNG.length };

const withImages = (text: string, ...refs: AttachmentRef[]): MessageSignalPayload['content'] => [
  { type: 'text', text },
  ...refs.map((attachment) => ({ type: 'image' as const, attachment })),
];

function turnEnds(events: readonly SessionEvent[]): string[] {
  return events.flatMap((e) => (e.type === 'turn/end' ? [`${e.turn}:${e.reason}`] : []));
}

/** Every request body the provider received, as text. */
function receivedBodies(h: Harness): string[] {
  return h.provider
    .requests()
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => r.body);
}

describe('messages a step cannot send, on a text-only model', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'hold here' }, text: 'held answer', hold: { afterChunks: 1, key: 'hold' } },
          { match: { lastUserContains: 'hold again' }, text: 'held again', hold: { afterChunks: 1, key: 'again' } },
          { text: 'ok', repeat: 100 },
        ],
      },
    });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('discards a followup citing an attachment nobody stored; the turns after it complete', async () => {
    const id = 'unusable-unknown';
    const handle = await h.start(id);
    await handle.signal(followupSignal, { messageId: 'bad', content: withImages('look at this', UNKNOWN) });
    let events = await waitForTurnEnd(h.store, id, 1);
    expect(events.find((e) => e.type === 'turn/end' && e.turn === 1)).toMatchObject({
      reason: 'blocked',
      error: { code: 'MESSAGES_DISCARDED' },
    });
    expect(messageFate(events, 'bad')).toMatchObject({
      state: 'discarded',
      discarded: { reason: expect.stringMatching(/sha256:0{64}.*not found/) as string },
    });
    // Never in the conversation, never sent.
    expect(events.some((e) => e.type === 'user/message' || e.type === 'inbox/claim')).toBe(false);
    expect(events.some((e) => e.type === 'request/sent')).toBe(false);

    await handle.signal(followupSignal, { messageId: 'plain-1', content: 'plain text now' });
    await handle.signal(followupSignal, { messageId: 'plain-2', content: 'and once more' });
    events = await waitForTurnEnd(h.store, id, 3);
    expect(turnEnds(events)).toEqual(['1:blocked', '2:completed', '3:completed']);
    expect(messageFate(events, 'plain-1')).toMatchObject({ state: 'entered', entered: { turn: 2, step: 1 } });
    expect(receivedBodies(h).some((body) => body.includes('look at this'))).toBe(false);
    await expectProviderSawTheLog(h, [id]);
  });

  it('discards an image for a model without vision; later turns and a compaction go on', async () => {
    const id = 'unusable-no-vision';
    const ref = await h.attachments.put(PNG, 'image/png', { name: 'dot.png' });
    const handle = await h.start(id, { compactAt: 0, keepRecentTurns: 0 });
    await handle.signal(followupSignal, { messageId: 'first', content: 'hello' });
    await waitForTurnEnd(h.store, id, 1);
    await handle.signal(followupSignal, { messageId: 'pictured', content: withImages('what is in it?', ref) });
    let events = await waitForTurnEnd(h.store, id, 2);
    expect(messageFate(events, 'pictured')).toMatchObject({
      state: 'discarded',
      discarded: {
        reason: expect.stringMatching(/model "scripted-model" of profile "scripted" does not accept images/) as string,
      },
    });
    expect(turnEnds(events)).toEqual(['1:completed', '2:blocked']);

    await handle.signal(followupSignal, { messageId: 'after', content: 'plain text after the picture' });
    events = await waitForTurnEnd(h.store, id, 3);
    expect(turnEnds(events)).toEqual(['1:completed', '2:blocked', '3:completed']);
    await handle.executeUpdate(compactUpdate, { args: [{}] });
    await waitForState(handle, (s) => s.compactions === 1);
    events = await h.store.read(id);
    expect(events.filter((e) => e.type === 'compact/end').map((e) => e.type === 'compact/end' && e.outcome)).toEqual([
      'applied',
    ]);
    await expectProviderSawTheLog(h, [id]);
  });

  it('discards a steer with two images that arrives mid-turn: that turn and the next complete', async () => {
    const id = 'unusable-steer';
    const ref = await h.attachments.put(PNG, 'image/png');
    const handle = await h.start(id);
    await handle.signal(followupSignal, { messageId: 'task', content: 'hold here' });
    await waitForState(handle, (s) => s.status === 'running');
    await handle.signal(steerSignal, { messageId: 'fuzzed', content: withImages('and these', UNKNOWN, ref) });
    await waitForLog(h.store, id, (log) => messageFate(log, 'fuzzed') !== undefined, 'the steer logged');
    h.provider.release('hold');
    let events = await waitForTurnEnd(h.store, id, 1);
    // Step 2 claimed the steer and had nothing left to answer: the answer of step 1 stands.
    expect(turnEnds(events)).toEqual(['1:completed']);
    expect(messageFate(events, 'fuzzed')).toMatchObject({ state: 'discarded' });
    expect(events.filter((e) => e.type === 'request/sent')).toHaveLength(1);

    await handle.signal(followupSignal, { messageId: 'next', content: 'plain text next' });
    events = await waitForTurnEnd(h.store, id, 2);
    expect(turnEnds(events)).toEqual(['1:completed', '2:completed']);
    await expectProviderSawTheLog(h, [id]);
  });

  it('enters the usable messages of a batch and discards only the unusable one', async () => {
    const id = 'unusable-mixed';
    const handle = await h.start(id);
    await handle.signal(followupSignal, { messageId: 'task', content: 'hold again' });
    await waitForState(handle, (s) => s.status === 'running');
    await handle.signal(steerSignal, { messageId: 'bad-steer', content: withImages('see', UNKNOWN) });
    await handle.signal(steerSignal, { messageId: 'good-steer', content: 'also consider this' });
    await waitForLog(h.store, id, (log) => messageFate(log, 'good-steer') !== undefined, 'the steers logged');
    h.provider.release('again');
    const events = await waitForTurnEnd(h.store, id, 1);
    expect(turnEnds(events)).toEqual(['1:completed']);
    expect(messageFate(events, 'bad-steer')).toMatchObject({ state: 'discarded' });
    expect(messageFate(events, 'good-steer')).toMatchObject({ state: 'entered', entered: { turn: 1, step: 2 } });
    // The discard comes before the claim of the step it was claimed for.
    const discard = events.find((e) => e.type === 'inbox/discard');
    const claim = events.find((e) => e.type === 'inbox/claim' && e.step === 2);
    expect(discard !== undefined && claim !== undefined && discard.seq < claim.seq).toBe(true);
    await expectProviderSawTheLog(h, [id]);
  });

  it('logs message text with lone surrogates well-formed, from a signal and from an update', async () => {
    const id = 'lone-surrogates';
    const handle = await h.start(id);
    await handle.signal(followupSignal, { messageId: 'by-signal', content: 'LONE \ud800 x', source: 'svc \udc00' });
    await waitForTurnEnd(h.store, id, 1);
    await handle.executeUpdate(sendUpdate, {
      args: [
        {
          messageId: 'by-update',
          content: [{ type: 'text', text: 'LONE \ud800 y' }],
          target: 'next-turn',
          wakeup: true,
        },
      ],
    });
    const events = await waitForTurnEnd(h.store, id, 2);
    expect(turnEnds(events)).toEqual(['1:completed', '2:completed']);
    const entered = events.filter((e) => e.type === 'user/message');
    expect(entered.map((e) => [e.messageId, e.content, e.source])).toEqual([
      ['by-signal', 'LONE \ufffd x', 'svc \ufffd'],
      ['by-update', [{ type: 'text', text: 'LONE \ufffd y' }], undefined],
    ]);
    // The rows as stored: valid UTF-8, and JSON without a lone surrogate (which strict parsers such as jq refuse).
    const db = new Database(h.storePath, { readonly: true });
    try {
      const rows = db
        .prepare('SELECT seq, CAST(body AS BLOB) AS body FROM events WHERE session_id = ? ORDER BY seq')
        .all(id) as Array<{ seq: number; body: Buffer }>;
      expect(rows.length).toBe(events.length);
      for (const row of rows) {
        const text = new TextDecoder('utf-8', { fatal: true }).decode(row.body);
        expect(loneSurrogatesIn(JSON.parse(text)), `seq ${row.seq}`).toEqual([]);
      }
    } finally {
      db.close();
    }
    await expectProviderSawTheLog(h, [id]);
  });
});

describe('images on a vision model', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ vision: true, script: { mode: 'match', replies: [{ text: 'a dot', repeat: 20 }] } });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('sends a stored image, read from the attachment store, and still discards an unknown one', async () => {
    const id = 'vision-images';
    const ref = await h.attachments.put(PNG, 'image/png', { name: 'dot.png' });
    const handle = await h.start(id);
    await handle.signal(followupSignal, { messageId: 'pictured', content: withImages('what is in it?', ref) });
    let events = await waitForTurnEnd(h.store, id, 1);
    expect(turnEnds(events)).toEqual(['1:completed']);
    expect(messageFate(events, 'pictured')).toMatchObject({ state: 'entered' });
    expect(receivedBodies(h).some((b) => b.includes(`data:image/png;base64,${PNG.toString('base64')}`))).toBe(true);

    await handle.signal(followupSignal, { messageId: 'unknown', content: withImages('and this?', UNKNOWN) });
    await handle.signal(followupSignal, { messageId: 'plain', content: 'thanks' });
    events = await waitForTurnEnd(h.store, id, 3);
    expect(turnEnds(events)).toEqual(['1:completed', '2:blocked', '3:completed']);
    expect(messageFate(events, 'unknown')).toMatchObject({
      state: 'discarded',
      discarded: { reason: expect.stringMatching(/not found/) as string },
    });
    await expectProviderSawTheLog(h, [id]);
  });
});
