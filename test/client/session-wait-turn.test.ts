// SessionClient.waitForTurn and a receipt's turnEnded on a real Temporal server, Temporal only (no store read by
// the waits): a followup's turn completes, an interrupted one is aborted, a steer sent mid-turn lands in the
// running turn, a queued followup in the next, waits across a worker restart and across continue-as-new, a
// timeout and a closed session as typed errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionClient } from '../../src/client/session-client.js';
import type { TurnEnd } from '../../src/client/wait-for-turn.js';
import type { DhError } from '../../src/core/errors.js';
import { sessionWorkflowId } from '../../src/shared/session-messages.js';
import { startHarness, startHarnessOnOwnServer, waitForState, type Harness } from '../helpers/session-harness.js';

const completed = (turn: number): TurnEnd => ({ turn, reason: 'completed', errorCode: null });
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (error: unknown) => error as DhError,
  );

describe('waiting for a turn', () => {
  let h: Harness;
  let sessions: SessionClient;

  beforeAll(async () => {
    h = await startHarness({
      // The restart below brings up a worker on the same host: the session's host queue keeps its worker.
      hostId: 'wait-host',
      script: {
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'busy please' }, text: 'held answer', hold: { afterChunks: 1, key: 'busy' } },
          { match: { lastUserContains: 'steered in' }, text: 'steered' },
          { match: { lastUserContains: 'queued for later' }, text: 'the queued one ran as its own turn' },
          {
            // Minutes long, so only the interrupt ends it.
            match: { lastUserContains: 'stream slowly' },
            text: 'word '.repeat(4000),
            chunkSize: 5,
            chunkDelayMs: 50,
          },
          { text: 'ok', repeat: 20 },
        ],
      },
    });
    sessions = new SessionClient(h.client, { taskQueue: h.taskQueue });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it("resolves with a followup's turn once it completed, and at once for a turn that ended", async () => {
    const id = 'wait-followup';
    await h.start(id);
    await sessions.followup(id, 'hello', { messageId: 'f1' });
    await expect(sessions.turnEnded(id, 'f1', { timeoutMs: 30_000 })).resolves.toEqual(completed(1));
    const startedAt = Date.now();
    await expect(sessions.waitForTurn(id, 1)).resolves.toEqual(completed(1));
    expect(Date.now() - startedAt).toBeLessThan(2_000);
    await sessions.followup(id, 'again');
    await expect(sessions.waitForTurn(id, 2, { timeoutMs: 30_000 })).resolves.toEqual(completed(2));
  });

  it('resolves aborted for a turn cut by an interrupt', async () => {
    const id = 'wait-interrupt';
    const handle = await h.start(id);
    await sessions.followup(id, 'stream slowly');
    await waitForState(handle, (s) => s.status === 'running' && s.step === 1);
    const waiting = sessions.waitForTurn(id, 1, { timeoutMs: 60_000 });
    await sessions.interrupt(id);
    await expect(waiting).resolves.toEqual({ turn: 1, reason: 'aborted', errorCode: null });
  });

  it("a steer's receipt sent mid-turn resolves with the running turn; a queued followup's with the next", async () => {
    const id = 'wait-receipt';
    const handle = await h.start(id);
    await sessions.followup(id, 'busy please');
    await waitForState(handle, (s) => s.status === 'running');
    const steer = await sessions.send(id, { content: 'steered in', target: 'next-step', wakeup: true });
    const queued = await sessions.send(id, { content: 'queued for later', target: 'next-turn', wakeup: true });
    // The receipt stays a plain SendReceipt to whatever serializes or compares it.
    expect(Object.keys(steer).sort()).toEqual(['downgraded', 'duplicate', 'messageId', 'position', 'target']);
    expect(JSON.parse(JSON.stringify(queued))).toMatchObject({ target: 'next-turn', duplicate: false });
    const steerTurn = steer.turnEnded({ timeoutMs: 60_000 });
    const queuedTurn = queued.turnEnded({ timeoutMs: 60_000 });
    h.provider.release('busy');
    await expect(steerTurn).resolves.toEqual(completed(1));
    await expect(queuedTurn).resolves.toEqual(completed(2));
    expect(await sessions.messageStatus(id, steer.messageId)).toMatchObject({ state: 'handled', turn: 1 });
  });

  it('keeps waiting while no worker polls (a worker restart), then resolves', async () => {
    const id = 'wait-restart';
    await h.start(id);
    const waiting = sessions.waitForTurn(id, 1, { timeoutMs: 60_000 });
    await h.replaceWorker('wait-host', async () => {
      await sessions.followup(id, 'hello after the restart');
      await new Promise((r) => setTimeout(r, 1_500));
    });
    await expect(waiting).resolves.toEqual(completed(1));
  });

  it('a timeout is CLIENT_TIMEOUT naming the session and the turn', async () => {
    const id = 'wait-timeout';
    await h.start(id);
    const error = await failure(sessions.waitForTurn(id, 3, { timeoutMs: 500 }));
    expect(error).toMatchObject({ code: 'CLIENT_TIMEOUT', details: { sessionId: id, turn: 3 } });
    expect(error?.message).toMatch(/"wait-timeout": turn 3 did not end within 500 ms/);
    const controller = new AbortController();
    const aborted = failure(sessions.waitForTurn(id, 3, { signal: controller.signal }));
    controller.abort(new Error('no longer needed'));
    expect((await aborted)?.message).toBe('no longer needed');
  });

  it('SESSION_CLOSED past the last turn of a closed session; a turn it ran still resolves', async () => {
    const id = 'wait-closed';
    const handle = await h.start(id);
    await sessions.followup(id, 'one turn');
    await sessions.waitForTurn(id, 1, { timeoutMs: 30_000 });
    const waiting = failure(sessions.waitForTurn(id, 2, { timeoutMs: 30_000 }));
    await sessions.close(id);
    await handle.result();
    expect(await waiting).toMatchObject({ code: 'SESSION_CLOSED', details: { sessionId: id, turn: 2, lastTurn: 1 } });
    await expect(sessions.waitForTurn(id, 1, { timeoutMs: 30_000 })).resolves.toEqual(completed(1));
    expect(await failure(sessions.waitForTurn('wait-never-started', 1))).toMatchObject({ code: 'SESSION_NOT_FOUND' });
  });
});

describe('waiting for a turn across continue-as-new', () => {
  let h: Harness;
  beforeAll(async () => {
    // Suggest continue-as-new early: a run holds a few turns at most.
    h = await startHarnessOnOwnServer(
      { 'limit.historyCount.suggestContinueAsNew': 30 },
      { script: { mode: 'match', replies: [{ text: 'chatted', repeat: 40 }] } },
    );
  }, 120_000);
  afterAll(async () => h?.stop());

  it('follows the chain: each receipt resolves with its turn, and older turns keep their reason', async () => {
    const id = 'wait-carry';
    const sessions = new SessionClient(h.client, { taskQueue: h.taskQueue });
    await h.start(id);
    const firstRun = (await h.client.workflow.getHandle(sessionWorkflowId(id)).describe()).runId;
    // Each followup queued behind the one before: a receipt's turn is exact, not its position.
    const receipts = [];
    for (let i = 1; i <= 6; i++) {
      receipts.push(await sessions.send(id, { content: `chat ${i}`, target: 'next-turn', wakeup: true }));
    }
    const ends = await Promise.all(receipts.map((receipt) => receipt.turnEnded({ timeoutMs: 60_000 })));
    expect(ends).toEqual([1, 2, 3, 4, 5, 6].map(completed));
    await expect(sessions.waitForTurn(id, 7, { timeoutMs: 1_000 })).rejects.toMatchObject({ code: 'CLIENT_TIMEOUT' });
    const waiting = sessions.waitForTurn(id, 7, { timeoutMs: 60_000 });
    await sessions.followup(id, 'chat 7');
    await expect(waiting).resolves.toEqual(completed(7));
    const lastRun = (await h.client.workflow.getHandle(sessionWorkflowId(id)).describe()).runId;
    expect(lastRun, 'the session continued as new').not.toBe(firstRun);
    await expect(sessions.waitForTurn(id, 1)).resolves.toEqual(completed(1));
  }, 120_000);
});
