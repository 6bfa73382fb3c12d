// A tool's progress through the real stack (Temporal, the scripted provider, SQLite and its side
// channel): a follower sees each update of the running call in order, between the call's logged start
// and result; nothing of it reaches the session log or the workflow history, and the audit and the
// request derivation are as clean as without it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import { auditSession } from '../../src/audit/audit-session.js';
import { followupSignal } from '../../src/shared/session-messages.js';
import type { DeltaChannel } from '../../src/streaming/delta-channel.js';
import { openDeltaChannel } from '../../src/streaming/open-delta-channel.js';
import { SessionFollower, type FollowOp } from '../../src/streaming/session-follower.js';
import { compactBefore } from '../../src/streaming/live-stream-plugin.js';
import { lateLiveStream, type LateLiveStream } from '../helpers/late-live-stream.js';
import { expectProviderSawTheLog, startHarness, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { progressMessage, progressTool } from '../helpers/test-tools.js';

/** Polls `check` until it holds (fails after `timeoutMs`, saying what did not happen). */
async function until(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} never happened`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Every string of a workflow history, payload bytes decoded: what the history holds, searchable. */
function historyText(value: unknown, out: string[] = []): string[] {
  if (value instanceof Uint8Array) out.push(Buffer.from(value).toString('utf8'));
  else if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const item of value) historyText(item, out);
  else if (typeof value === 'object' && value !== null) for (const item of Object.values(value)) historyText(item, out);
  return out;
}

const summary = (ops: readonly FollowOp[]) =>
  ops.flatMap((op) =>
    op.type === 'tool-progress'
      ? [`${op.name} ${op.progress}/${op.total ?? '-'} ${op.message ?? '-'}`]
      : op.type === 'event' && (op.event.type === 'tool/start' || op.event.type === 'tool/result')
        ? [`${op.event.type} ${op.event.callId}`]
        : [],
  );

describe('tool progress through the real stack', () => {
  let h: Harness;
  let live: LateLiveStream;
  let reader: DeltaChannel;
  /** What the tool awaits after each update; each test sets it. */
  let reached: (n: number) => Promise<void> = () => Promise.resolve();

  beforeAll(async () => {
    live = lateLiveStream();
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'count to three' },
            toolCalls: [{ id: 'p1', name: 'count_up', arguments: {} }],
          },
          { match: { lastUserContains: 'count to three' }, text: 'Counted to three.' },
        ],
      },
      tools: [progressTool({ reached: (n) => reached(n) })],
      plugins: [live.plugin],
    });
    live.bind(h.storePath);
    // The viewer's own connection to the side channel, as `dh attach` in another process would open it.
    reader = openDeltaChannel(h.storePath);
  });
  afterAll(async () => {
    await reader?.close();
    await h?.stop();
    await live?.close();
  });

  it(
    'a follower sees 1/3, 2/3, 3/3 with their messages while the call runs; the log and history hold none',
    {
      timeout: 90_000,
    },
    async () => {
      const sessionId = 'progress-follower';
      const follower = new SessionFollower(h.store, reader, sessionId);
      const ops: FollowOp[] = [];
      let stop = false;
      const following = (async () => {
        const deadline = Date.now() + 80_000;
        while (!stop && Date.now() < deadline) {
          const batch = await follower.poll();
          ops.push(...batch);
          if (batch.some((op) => op.type === 'event' && op.event.type === 'turn/end')) return;
          await follower.wait(100);
        }
        throw new Error('the follower never saw the turn end');
      })();
      // The tool moves on only once the follower has shown its last update: none can be superseded.
      reached = (n) =>
        until(() => ops.some((op) => op.type === 'tool-progress' && op.progress === n), `the follower showing ${n}/3`);

      try {
        const handle = await h.start(sessionId);
        await handle.signal(followupSignal, { content: 'please count to three' });
        await following;

        expect(summary(ops)).toEqual([
          'tool/start p1',
          `count_up 1/3 ${progressMessage(1)}`,
          `count_up 2/3 ${progressMessage(2)}`,
          `count_up 3/3 ${progressMessage(3)}`,
          'tool/result p1',
        ]);

        // The log: the call and its result, no trace of its progress.
        const events = await waitForTurnEnd(h.store, sessionId, 1);
        expect(events.find((e) => e.type === 'tool/result')).toMatchObject({ status: 'ok', output: 'counted to 3' });
        expect(JSON.stringify(events)).not.toContain('progress-note');
        expect(events.map((e) => e.type).filter((type) => type.includes('progress'))).toEqual([]);

        // The audit (chain, structure, re-derived requests, the history mirror) and the provider's view agree.
        const report = await auditSession({ store: h.store, sessionId, profile: h.profile, client: h.client });
        expect(report.failures).toEqual([]);
        expect(report.ok).toBe(true);
        expect(report.rows.map((r) => r.id)).toEqual(['1.1', '1.2']);
        await expectProviderSawTheLog(h, [sessionId]);

        // The workflow history: the task is in it (the decoding works), the progress is not.
        const history: History = await handle.fetchHistory();
        const text = historyText(history).join('\n');
        expect(text).toContain('please count to three');
        expect(text).not.toContain('progress-note');

        // The side channel keeps them through the next step only (a viewer reconnecting then resumes
        // exactly); the step after it compacts them away.
        const progressRows = (await reader.read(sessionId, 0)).filter((row) => row.kind === 'tool-progress');
        expect(progressRows.length).toBeGreaterThan(0);
        expect(new Set(progressRows.map((row) => `${row.turn}.${row.step}`))).toEqual(new Set(['1.1']));
        await reader.pruneBefore(sessionId, ...compactBefore(1, 3));
        expect((await reader.read(sessionId, 0)).filter((row) => row.kind === 'tool-progress')).toEqual([]);
      } finally {
        stop = true;
        await following.catch(() => undefined);
        reached = () => Promise.resolve();
      }
    },
  );
});
