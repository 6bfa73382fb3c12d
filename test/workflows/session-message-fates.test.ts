// Every message's fate on a real Temporal server: the `send` update's busy policy (queue, steer, reject with
// SESSION_BUSY) while a turn runs, the messageStatus query (queued, claimed, handled, refused, unknown; also
// through the `temporal` CLI, a client nobody here wrote), and a close that discards what no turn will claim.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../../src/client/session-client.js';
import { messageFate } from '../../src/core/index.js';
import {
  closeSignal,
  followupSignal,
  injectSignal,
  messageStatusQuery,
  sessionWorkflowId,
} from '../../src/shared/session-messages.js';
import { waitForLog } from '../helpers/scenario-runtime.js';
import { startHarness, waitForState, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';

const run = promisify(execFile);

describe('message fates', () => {
  let h: Harness;
  let sessions: SessionClient;

  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'busy please' }, text: 'held answer', hold: { afterChunks: 1, key: 'busy' } },
          { match: { lastUserContains: 'queued for later' }, text: 'the queued one ran as its own turn' },
          { match: { lastUserContains: 'steered in' }, text: 'steered' },
          { text: 'ok', repeat: 10 },
        ],
      },
    });
    sessions = new SessionClient(h.client, { taskQueue: h.taskQueue });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it("applies a send's ifBusy while a turn runs: queue, steer, reject", async () => {
    const id = 'fates-busy';
    const handle = await h.start(id);
    await handle.signal(followupSignal, { content: 'busy please', messageId: 'first' });
    await waitForState(handle, (s) => s.status === 'running');
    const send = (messageId: string, content: string, ifBusy: 'queue' | 'steer' | 'reject') =>
      sessions.send(id, { content, messageId, target: 'next-step', wakeup: true, ifBusy });
    expect(await send('q', 'queued for later', 'queue')).toMatchObject({ target: 'next-turn', duplicate: false });
    expect(await send('s', 'steered in', 'steer')).toMatchObject({ target: 'next-step' });
    const refused = await send('r', 'never queued', 'reject').then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((refused as WorkflowUpdateFailedError).cause).toMatchObject({ type: 'SESSION_BUSY' });
    expect((refused as WorkflowUpdateFailedError).cause?.message).toMatch(/is busy: turn 1 is running/);
    // The status query while the answer is held: the steer and the queued one are queued; the first claimed.
    await waitForLog(h.store, id, (log) => log.filter((e) => e.type === 'inbox/enqueue').length === 3, 'all logged');
    expect(await sessions.messageStatus(id, 'first')).toMatchObject({ state: 'claimed' });
    expect(await sessions.messageStatus(id, 's')).toMatchObject({ state: 'queued', target: 'next-step' });
    expect(await sessions.messageStatus(id, 'q')).toMatchObject({ state: 'queued', target: 'next-turn' });
    expect(await sessions.messageStatus(id, 'r')).toMatchObject({ state: 'unknown' });

    h.provider.release('busy');
    const events = await waitForTurnEnd(h.store, id, 2);
    expect(messageFate(events, 's')).toMatchObject({ state: 'entered', entered: { turn: 1, step: 2 } });
    expect(messageFate(events, 'q')).toMatchObject({ state: 'entered', entered: { turn: 2, step: 1 } });
    expect(messageFate(events, 'r')).toBeUndefined();
    await waitForState(handle, (s) => s.status === 'idle' && s.turn === 2);
    expect(await sessions.messageStatus(id, 's')).toMatchObject({ state: 'handled' });
    // Idle, the policy does not apply: the send goes where its target says, and reject does not refuse.
    expect(await send('idle', 'ok now', 'reject')).toMatchObject({ target: 'next-step', duplicate: false });
  });

  it('answers messageStatus to the temporal CLI, and names a refused signal', async () => {
    const id = 'fates-refused';
    const handle = await h.start(id);
    await handle.signal(closeSignal, { reason: 'done' });
    await handle.signal(injectSignal, { content: 'too late', messageId: 'late' });
    const answer = await run(inject('temporalCliPath'), [
      'workflow',
      'query',
      '--address',
      inject('temporalAddress'),
      '--namespace',
      inject('temporalNamespace'),
      '--workflow-id',
      sessionWorkflowId(id),
      '--name',
      messageStatusQuery.name,
      '--input',
      '"late"',
      '--output',
      'json',
    ]).catch((error: unknown) => ({ stdout: '', stderr: String(error) }));
    // The workflow may have completed already (a query on a closed run still answers from its history).
    expect(answer.stdout, answer.stderr).toContain('"refused"');
    expect(answer.stdout).toContain('the session is closing');
  });

  it('handles the signals a run starts with in the order they arrived, not the order handlers are set', async () => {
    // The worker is stopped while two sessions start and are signalled, so every signal reaches the run in
    // its first task (the SDK would hand them out by handler: followup before inject before close).
    const [closing, mixed] = ['fates-arrival-close', 'fates-arrival-mixed'];
    let closed: Promise<unknown> = Promise.resolve();
    await h.replaceWorker('arrival-order', async () => {
      const handle = await h.start(closing);
      await handle.signal(injectSignal, { content: 'said before the close', messageId: 'early' });
      await handle.signal(closeSignal, { reason: 'done' });
      await handle.signal(injectSignal, { content: 'said after the close', messageId: 'after' });
      closed = handle.result();
      const other = await h.start(mixed);
      await other.signal(injectSignal, { content: 'context first', messageId: 'ctx' });
      await other.signal(followupSignal, { content: 'then the question', messageId: 'go' });
    });
    await closed;
    const log = await h.store.read(closing);
    expect(messageFate(log, 'early')).toMatchObject({ state: 'discarded' });
    expect(messageFate(log, 'after')).toBeUndefined();
    expect(await sessions.messageStatus(closing, 'after')).toMatchObject({
      state: 'refused',
      reason: 'the session is closing',
    });

    const events = await waitForTurnEnd(h.store, mixed, 1);
    const enqueued = events.flatMap((e) => (e.type === 'inbox/enqueue' ? [e.messageId] : []));
    expect(enqueued).toEqual(['ctx', 'go']);
    expect(messageFate(events, 'ctx')).toMatchObject({ state: 'entered', entered: { turn: 1, step: 1 } });
  });

  it('discards at close what no turn will claim, so the log says where every message ended', async () => {
    const id = 'fates-close';
    const handle = await h.start(id);
    await handle.signal(injectSignal, { content: 'context nobody will read', messageId: 'orphan' });
    await waitForLog(h.store, id, (log) => log.some((e) => e.type === 'inbox/enqueue'), 'the inject logged');
    await handle.signal(closeSignal, {});
    await handle.result();
    const events = await h.store.read(id);
    expect(messageFate(events, 'orphan')).toMatchObject({
      state: 'discarded',
      discarded: { reason: 'the session closed' },
    });
  });
});
