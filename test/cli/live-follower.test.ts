// The live side channel and the follower that merges it with the log: a retried attempt's stale output
// is discarded, the logged answer completes (or replaces) what was shown live, a late subscriber
// catches up from the log, deltas of logged steps are pruned, a running tool call's progress is shown
// between its logged start and result, waits for the fleet limiter stay one row each — on SQLite and on
// PostgreSQL (NOTIFY).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LiveRenderer } from '../../src/cli/live/live-renderer.js';
import { toEvent, type SessionEvent } from '../../src/core/index.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import type { DeltaChannel, LiveDeltaDraft } from '../../src/streaming/delta-channel.js';
import { openDeltaChannel } from '../../src/streaming/open-delta-channel.js';
import { limiterWaitLabel } from '../../src/streaming/limiter-wait-label.js';
import { liveStreamPlugin } from '../../src/streaming/live-stream-plugin.js';
import { SessionFollower, type FollowOp } from '../../src/streaming/session-follower.js';
import {
  assistantMessage,
  event,
  inboxEnqueue,
  sessionStart,
  stepStart,
  turnStart,
  userMessage,
} from '../helpers/event-builders.js';

const delta = (sessionId: string, attempt: number, text: string, step = 1): LiveDeltaDraft => ({
  sessionId,
  turn: 1,
  step,
  attempt,
  kind: 'text',
  text,
  at: Date.now(),
});

const summary = (ops: readonly FollowOp[]) =>
  ops.map((op) =>
    op.type === 'text'
      ? `${op.restart ? `retry:${op.attempt} ` : ''}text:${op.text}`
      : op.type === 'answer'
        ? `answer:${op.rest}${op.replaced ? ':replaced' : ''}`
        : op.type === 'event'
          ? op.event.type
          : op.type === 'tool-progress'
            ? `progress:${op.callId}:${op.name}:${op.progress}/${op.total ?? '-'}:${op.message ?? '-'}`
            : op.type,
  );

/** A progress row of `callId` in step 1.1, as the live-stream plugin writes it. */
const progressRow = (
  sessionId: string,
  callId: string,
  progress: number,
  message: string,
  attempt = 1,
): LiveDeltaDraft => ({
  sessionId,
  turn: 1,
  step: 1,
  attempt,
  kind: 'tool-progress',
  text: message,
  callId,
  name: 'count_up',
  progress,
  total: 3,
  at: Date.now(),
});

describe('SessionFollower on the SQLite side channel', () => {
  let dir: string;
  let store: SqliteSessionStore;
  let channel: DeltaChannel;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'dh-follower-'));
    store = SqliteSessionStore.open(join(dir, 'sessions.db'));
    channel = openDeltaChannel(join(dir, 'sessions.db'));
  });
  afterAll(async () => {
    await channel?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function openStep(sessionId: string): Promise<void> {
    await store.create(sessionId, { createdAt: 1 });
    const events: SessionEvent[] = [
      sessionStart(sessionId),
      inboxEnqueue(1, 'm1', 'question'),
      turnStart(2, 1),
      toEvent({ type: 'inbox/claim', at: 3, turn: 1, step: 1, messageIds: ['m1'] }, 3),
      stepStart(4, 1, 1),
      userMessage(5, 1, 1, 'm1', 'question'),
    ];
    await store.append(sessionId, 0, events);
  }

  it('drops a stale attempt, then completes the live text with the logged answer', async () => {
    await openStep('retry');
    const viewer = new SessionFollower(store, channel, 'retry');
    expect(summary(await viewer.poll())).toEqual([
      'session/start',
      'inbox/enqueue',
      'turn/start',
      'inbox/claim',
      'step/start',
      'user/message',
    ]);

    // The first delta is written at once; the ones right after it are coalesced into one row.
    channel.publish(delta('retry', 1, 'Hel'));
    channel.publish(delta('retry', 1, 'lo '));
    channel.publish(delta('retry', 1, 'wrong'));
    await channel.flush();
    expect(summary(await viewer.poll())).toEqual(['text:Hel', 'text:lo wrong']);

    // The activity was retried: attempt 2 streams again; late output of attempt 1 is ignored.
    channel.publish(delta('retry', 2, 'Hello '));
    await channel.flush();
    channel.publish(delta('retry', 1, ' more stale'));
    await channel.flush();
    expect(summary(await viewer.poll())).toEqual(['retry:2 text:Hello ']);

    await store.append('retry', 6, [assistantMessage(6, 1, 1, 'Hello world')]);
    channel.publish(delta('retry', 2, 'world'));
    await channel.flush();
    // Logged: only the rest is shown, and deltas of the logged step are dropped.
    expect(summary(await viewer.poll())).toEqual(['answer:world']);

    // A late subscriber catches up from the log alone.
    const late = new SessionFollower(store, channel, 'retry', { fromSeq: 6 });
    expect(summary(await late.poll())).toEqual(['answer:Hello world']);
  });

  it('shows the whole logged answer again when the live text was not its prefix', async () => {
    await openStep('replaced');
    const viewer = new SessionFollower(store, channel, 'replaced', { fromSeq: 6 });
    channel.publish(delta('replaced', 1, 'Draft that was cut'));
    await channel.flush();
    expect(summary(await viewer.poll())).toEqual(['text:Draft that was cut']);
    // A retry found the answer already logged by the crashed attempt: no deltas, just the log.
    await store.append('replaced', 6, [assistantMessage(6, 1, 1, 'Final answer')]);
    expect(summary(await viewer.poll())).toEqual(['answer:Final answer:replaced']);
  });

  it("shows a tool call's progress while it runs: changes only, the latest attempt, not after its result", async () => {
    await openStep('progress');
    const at = (seq: number) => 1_750_000_000_000 + seq;
    await store.append('progress', 6, [
      event(
        {
          type: 'assistant/message',
          at: at(6),
          turn: 1,
          step: 1,
          content: null,
          toolCalls: [
            { id: 'c1', name: 'count_up', arguments: '{}' },
            { id: 'c2', name: 'count_up', arguments: '{}' },
          ],
          finishReason: 'tool_calls',
          usage: { inputUncached: 10, cacheRead: 0, output: 5, reasoning: 0 },
        },
        6,
      ),
    ]);
    const viewer = new SessionFollower(store, channel, 'progress', { fromSeq: 6 });
    // A call the log does not show as started: nothing to show it for.
    channel.publish(progressRow('progress', 'c9', 1, 'not a running call'));
    await channel.flush();
    expect(summary(await viewer.poll())).toEqual(['answer:']);

    await store.append('progress', 7, [
      event({ type: 'tool/start', at: at(7), turn: 1, step: 1, callId: 'c1', name: 'count_up' }, 7),
      event({ type: 'tool/start', at: at(8), turn: 1, step: 1, callId: 'c2', name: 'count_up' }, 8),
    ]);
    channel.publish(progressRow('progress', 'c1', 1, 'one'));
    channel.publish(progressRow('progress', 'c2', 1, 'other call'));
    channel.publish(progressRow('progress', 'c1', 1, 'one')); // the same again: not shown twice
    await channel.flush();
    expect(summary(await viewer.poll())).toEqual([
      'tool/start',
      'tool/start',
      'progress:c1:count_up:1/3:one',
      'progress:c2:count_up:1/3:other call',
    ]);

    // The tool activity was retried: attempt 2 reports from the start; late rows of attempt 1 are stale.
    channel.publish(progressRow('progress', 'c1', 1, 'one', 2));
    channel.publish(progressRow('progress', 'c1', 2, 'stale', 1));
    channel.publish(progressRow('progress', 'c1', 2, 'two', 2));
    await channel.flush();
    expect(summary(await viewer.poll())).toEqual(['progress:c1:count_up:1/3:one', 'progress:c1:count_up:2/3:two']);

    // A late viewer catches up: the running calls' progress rows are still there (pruned with the step),
    // attempt 2's restart included.
    const late = new SessionFollower(store, channel, 'progress', { fromSeq: 7 });
    expect(summary(await late.poll())).toEqual([
      'tool/start',
      'tool/start',
      'progress:c1:count_up:1/3:one',
      'progress:c2:count_up:1/3:other call',
      'progress:c1:count_up:1/3:one',
      'progress:c1:count_up:2/3:two',
    ]);

    // c1's result is logged: a progress row written just before it, read in the same round, is not shown.
    channel.publish(progressRow('progress', 'c1', 3, 'three', 2));
    channel.publish(progressRow('progress', 'c2', 2, 'still running'));
    await channel.flush();
    await store.append('progress', 9, [
      event(
        {
          type: 'tool/result',
          at: at(9),
          turn: 1,
          step: 1,
          callId: 'c1',
          name: 'count_up',
          output: 'ok',
          status: 'ok',
        },
        9,
      ),
    ]);
    expect(summary(await viewer.poll())).toEqual(['tool/result', 'progress:c2:count_up:2/3:still running']);
  });

  it("shows a step's wait for the fleet limiter, as the plugin publishes it, until the step's answer is logged", async () => {
    await openStep('limited');
    const viewer = new SessionFollower(store, channel, 'limited');
    await viewer.poll();
    const plugin = liveStreamPlugin(channel);
    const context = { sessionId: 'limited', turn: 1, step: 1, events: [] };
    plugin.onLimiterWait?.({ reason: 'rate-limit', ahead: 3, waitMs: 1_500, attempt: 1, at: Date.now() }, context);
    await channel.flush();
    const ops = await viewer.poll();
    expect(ops).toEqual([
      {
        type: 'limiter-wait',
        turn: 1,
        step: 1,
        reason: 'rate-limit',
        ahead: 3,
        waitMs: 1_500,
        position: viewer.position,
      },
    ]);
    const wait = ops[0];
    if (wait?.type !== 'limiter-wait') throw new Error('no limiter-wait op');
    expect(limiterWaitLabel(wait)).toBe("waiting for the provider's rate limit (3 ahead, ~2 s)…");
    expect(limiterWaitLabel({ ...wait, reason: 'fair-share', ahead: 1, waitMs: 0 })).toBe(
      "waiting for this session tree's turn at the provider (1 ahead)…",
    );

    // Once the answer is logged, a late wait row of that step is not news.
    await store.append('limited', 6, [assistantMessage(6, 1, 1, 'done')]);
    plugin.onLimiterWait?.({ reason: 'rate-limit', ahead: 1, waitMs: 500, attempt: 1, at: Date.now() }, context);
    await channel.flush();
    expect(summary(await viewer.poll())).toEqual(['answer:done']);
  });

  it('keeps waits reported in one publishing window apart: `dh run` prints one wait line, never a merged reason', async () => {
    await openStep('waits');
    const viewer = new SessionFollower(store, channel, 'waits');
    await viewer.poll();
    const plugin = liveStreamPlugin(channel);
    const context = { sessionId: 'waits', turn: 1, step: 1, events: [] };
    // The limiter reports again each time it looks: the first report is written at once, the next two
    // arrive within the channel's publishing window and are written in one batch.
    for (const waitMs of [800, 600, 400])
      plugin.onLimiterWait?.({ reason: 'rate-limit', ahead: 0, waitMs, attempt: 1, at: Date.now() }, context);
    await channel.flush();
    const ops = await viewer.poll();
    let err = '';
    const sink = new Writable({
      write(chunk: Buffer | string, _encoding, done) {
        err += chunk.toString();
        done();
      },
    });
    const renderer = new LiveRenderer({ sessionId: 'waits', out: sink, err: sink, tty: false });
    for (const op of ops) renderer.op(op);
    // Before the fix the batch was one row whose reason was both texts: "⏳ waiting (rate-limitrate-limit) (0 ahead)…".
    expect(err.trimEnd().split('\n')).toEqual(["⏳ waiting for the provider's rate limit (0 ahead)…"]);
    // Each report is a wait of its own, with its own figures.
    expect(ops.map((op) => (op.type === 'limiter-wait' ? `${op.reason}:${op.waitMs}` : op.type))).toEqual([
      'rate-limit:800',
      'rate-limit:600',
      'rate-limit:400',
    ]);
  });

  it('prunes the deltas of steps whose answers are logged', async () => {
    channel.publish(delta('pruned', 1, 'step one', 1));
    channel.publish(delta('pruned', 1, 'step two', 2));
    await channel.flush();
    expect(await channel.pruneBefore('pruned', 1, 2)).toBe(1);
    expect((await channel.read('pruned', 0)).map((d) => d.text)).toEqual(['step two']);
  });
});

describe('the PostgreSQL side channel', () => {
  let channel: DeltaChannel;
  let reader: DeltaChannel;
  beforeAll(() => {
    channel = openDeltaChannel(inject('postgresUrl'));
    reader = openDeltaChannel(inject('postgresUrl'));
  });
  afterAll(async () => {
    await channel?.close();
    await reader?.close();
  });

  it('wakes a waiting subscriber by NOTIFY with the first delta, and coalesces the ones after it', async () => {
    const sessionId = `pg-${process.pid}-${Date.now()}`;
    await reader.read(sessionId, 0); // creates the table
    await reader.wait(sessionId, 1); // LISTEN is set up
    const woke = reader.wait(sessionId, 10_000);
    const started = Date.now();
    channel.publish(delta(sessionId, 1, 'Hel'));
    channel.publish(delta(sessionId, 1, 'l'));
    channel.publish(delta(sessionId, 1, 'o'));
    await woke;
    expect(Date.now() - started).toBeLessThan(5_000);
    await channel.flush();
    const rows = await reader.read(sessionId, 0);
    expect(rows.map((r) => [r.text, r.attempt, r.turn, r.step])).toEqual([
      ['Hel', 1, 1, 1],
      ['lo', 1, 1, 1],
    ]);
    channel.publish(delta(sessionId, 2, 'again', 2));
    await channel.flush();
    const after = await reader.read(sessionId, rows.at(-1)?.id ?? 0);
    expect(after.map((r) => r.text)).toEqual(['again']);
    expect(await channel.pruneBefore(sessionId, 1, 2)).toBe(2);
    expect((await reader.read(sessionId, 0)).map((r) => r.text)).toEqual(['again']);
  });
});
