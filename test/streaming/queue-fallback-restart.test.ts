// A worker SIGKILLed mid-answer whose host does not come back: the model step's retry is not started on the
// host's model queue within its bound, so the workflow runs the step on the shared model queue as a new
// activity, whose attempt is 1 again. Through the real stack (Temporal dev server, child workers, the
// scripted provider, the SQLite store and side channel, SessionClient.watch), the shared queue's output
// must arrive live with `restart` and void the dead attempt's text — after host attempt 1 and after host
// attempt 2 — and the logged answer must continue the live text, not replace it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import proto from '@temporalio/proto';
import { describe, inject, it, type TestContext } from 'vitest';
import { SessionClient } from '../../src/client/session-client.js';
import type { SessionEvent } from '../../src/core/index.js';
import type { Reply } from '../../src/scripted-provider/script.js';
import { startScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { hostModelTaskQueue, modelTaskQueue } from '../../src/shared/task-queues.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { openDeltaChannel } from '../../src/streaming/open-delta-channel.js';
import type { StreamFrame } from '../../src/streaming/session-follower.js';
import { startChildWorker, type ChildWorker, type WorkerProcessConfig } from '../helpers/child-worker.js';
import { TEST_MODEL } from '../helpers/session-harness.js';

const { TimeoutType } = proto.temporal.api.enums.v1;

/**
 * Each attempt's answer, different from the others so a mix shows: it streams four chunks, then holds until
 * the test releases it (a dead attempt never is: its worker is killed while it holds).
 */
function heldReply(label: string): Reply {
  const text = Array.from({ length: 30 }, (_, i) => `${label} sentence ${i + 1}: naïve. `).join('');
  return { text, chunkSize: 8, chunkDelayMs: 5, hold: { afterChunks: 4, key: label } } as Reply;
}

/** Each scheduled activity as `name@queue`, and each timeout as `timed out: TYPE`, in history order. */
async function activityTrail(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) return [`${scheduled.activityType?.name}@${scheduled.taskQueue?.name}`];
    const timedOut = e.activityTaskTimedOutEventAttributes?.failure?.timeoutFailureInfo?.timeoutType;
    return timedOut !== undefined && timedOut !== null ? [`timed out: ${TimeoutType[timedOut]}`] : [];
  });
}

/**
 * Runs turn 1 of a session whose step 1.1 is cut on its host `hostAttempts` times (the host has a worker
 * again after each cut but the last), then runs on a worker of another host, from the shared model queue.
 */
async function cutThenShared(hostAttempts: number, { expect, onTestFinished }: TestContext): Promise<void> {
  const cleanups: Array<() => Promise<void>> = [];
  onTestFinished(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  });
  const sessionId = `fallback-after-${hostAttempts}`;
  const dir = mkdtempSync(join(tmpdir(), 'dh-fallback-'));
  cleanups.push(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
  const labels = [...Array.from({ length: hostAttempts }, (_, i) => `Host${i + 1}`), 'Shared'];
  const provider = await startScriptedProvider({
    script: { models: [TEST_MODEL], mode: 'ordered', replies: labels.map(heldReply) },
  });
  cleanups.push(() => provider.close());
  const storePath = join(dir, 'sessions.db');
  const store = SqliteSessionStore.open(storePath);
  cleanups.push(() => store.close());
  const channel = openDeltaChannel(storePath);
  cleanups.push(() => channel.close());
  const address = inject('temporalAddress');
  const namespace = inject('temporalNamespace');
  const connection = await Connection.connect({ address });
  cleanups.push(() => connection.close());
  const taskQueue = `fallback-${hostAttempts}-${process.pid}-${Date.now()}`;
  const config = (hostId: string): WorkerProcessConfig => ({
    address,
    namespace,
    taskQueue,
    workflowBundlePath: inject('workflowBundlePath'),
    storePath,
    providerBaseURL: provider.url,
    runLog: join(dir, 'runs.log'),
    // Longer than any hold: a held stream must not be cut by the idle watchdog.
    idleTimeoutMs: 120_000,
    liveStream: true,
    hostId,
  });
  const workers: ChildWorker[] = [];
  cleanups.push(async () => {
    await Promise.all(workers.map((w) => w.stop(2_000)));
  });
  const startWorker = async (hostId: string) => {
    const worker = await startChildWorker(config(hostId));
    workers.push(worker);
    return worker;
  };

  // The watch runs the whole time, as a client would, and keeps every frame.
  const sessions = new SessionClient(new Client({ connection, namespace }), { taskQueue });
  const frames: StreamFrame[] = [];
  const stopWatch = new AbortController();
  const watching = (async () => {
    for await (const frame of sessions.watch(sessionId, { store, channel }, { pollMs: 50, signal: stopWatch.signal }))
      frames.push(frame);
  })();
  cleanups.push(async () => {
    stopWatch.abort();
    await watching.catch(() => undefined);
  });
  const shown = () =>
    frames.map((f) => (f.type === 'text' ? `${f.restart ? `[restart ${f.attempt}]` : ''}${f.text}` : '')).join('');
  const until = async (what: string, predicate: () => boolean, timeoutMs = 120_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) {
        const outputs = workers.map((w, i) => `worker #${i + 1}:\n${w.output()}`).join('\n');
        throw new Error(`timed out waiting for ${what}; the watch showed: ${JSON.stringify(shown())}\n${outputs}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  /** The watch has shown text of the attempt that got the reply labelled `label`. */
  const showed = (label: string) => () => frames.some((f) => f.type === 'text' && f.text.includes(label));

  let host = await startWorker('first');
  await sessions.followup(sessionId, 'answer at length', { start: true, messageId: 'm1' });
  for (let attempt = 1; attempt <= hostAttempts; attempt++) {
    await until(`host attempt ${attempt} to stream`, showed(`Host${attempt}`));
    // What serves the retry is up before the kill (a slow start must not decide the path): the host's next
    // worker, or, once the host is gone for good, a worker of another host.
    const next = await startWorker(attempt < hostAttempts ? 'first' : 'second');
    host.kill('SIGKILL');
    expect((await host.exited).signal).toBe('SIGKILL');
    host = next;
  }
  await until('the shared queue to stream', showed('Shared'));
  provider.release('Shared');
  await until('the answer', () => frames.some((f) => f.type === 'answer'));

  // The path taken: the step on the host's model queue, not started there in time, then on the shared one.
  const trail = await activityTrail(sessions.handle(sessionId));
  expect(trail).toEqual([
    `modelStep@${hostModelTaskQueue(taskQueue, 'first')}`,
    'timed out: TIMEOUT_TYPE_SCHEDULE_TO_START',
    `modelStep@${modelTaskQueue(taskQueue)}`,
  ]);
  // Each new attempt's first output restarts the step: the host's retries count up, the shared queue's
  // activity counts from 1 again.
  const restarts = frames.flatMap((f) => ('restart' in f && f.restart === true ? [f.attempt] : []));
  expect(restarts).toEqual([...Array.from({ length: hostAttempts - 1 }, (_, i) => i + 2), 1]);
  // What a consumer holds: the live text, voided at each restart, then the logged answer's rest.
  let live = '';
  for (const frame of frames) {
    if ('restart' in frame && frame.restart === true) live = '';
    if (frame.type === 'text') live += frame.text;
  }
  const answer = frames.find((f) => f.type === 'answer');
  if (answer?.type !== 'answer') throw new Error('no answer frame');
  const logged = (await store.read(sessionId)).find(
    (e): e is Extract<SessionEvent, { type: 'assistant/message' }> => e.type === 'assistant/message',
  );
  expect(logged?.content).toBe(heldReply('Shared').text);
  expect(answer.replaced).toBe(false);
  expect(live.length).toBeGreaterThan(0);
  expect(live + answer.rest).toBe(logged?.content);
}

describe("a model step moved to the shared queue after its host's worker died", () => {
  it.concurrent('restarts the live text after host attempt 1', { timeout: 240_000 }, (context) =>
    cutThenShared(1, context),
  );
  it.concurrent('restarts the live text after host attempt 2', { timeout: 240_000 }, (context) =>
    cutThenShared(2, context),
  );
});
