// A steer accepted while a step streams is in the log before the step ends, and stays there once when the
// worker running the step is SIGKILLed: a fresh worker retries the step, the steer enters step 2 exactly once.
// Real Temporal server, workers in child processes, the scripted provider holding the first answer's stream.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import type { SessionEvent } from '../../src/core/index.js';
import { startScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { followupSignal, sessionWorkflowId, steerSignal } from '../../src/shared/session-messages.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { agentSession } from '../../src/workflows/session-workflow.js';
import { startChildWorker, type ChildWorker } from '../helpers/child-worker.js';
import { waitForLog } from '../helpers/scenario-runtime.js';
import {
  expectProviderSawTheLog,
  scriptedProfile,
  TEST_MODEL,
  waitForState,
  waitForTurnEnd,
} from '../helpers/session-harness.js';

const count = (events: readonly SessionEvent[], type: SessionEvent['type'], messageId: string) =>
  events.filter((e) => e.type === type && 'messageId' in e && e.messageId === messageId).length;

describe('a steer logged mid-step survives the step worker being killed', () => {
  it('is logged before the kill, once, and enters the retried turn at step 2', async () => {
    const cleanups: Array<() => Promise<unknown>> = [];
    onTestFinished(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    });
    const dir = mkdtempSync(join(tmpdir(), 'dh-ingress-crash-'));
    cleanups.push(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
    const sessionId = 'ingress-crash';
    const provider = await startScriptedProvider({
      script: {
        models: [TEST_MODEL],
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'answer slowly' },
            text: 'the first answer, held mid-stream',
            chunkSize: 4,
            hold: { afterChunks: 1, key: 'first-answer' },
            repeat: 2, // the killed attempt and its retry
          },
          { match: { lastUserContains: 'steer before the kill' }, text: 'steered' },
        ],
      },
    });
    cleanups.push(() => provider.close());
    const storePath = join(dir, 'sessions.db');
    const store = SqliteSessionStore.open(storePath);
    cleanups.push(() => store.close());
    const address = inject('temporalAddress');
    const connection = await Connection.connect({ address });
    cleanups.push(() => connection.close());
    const client = new Client({ connection, namespace: inject('temporalNamespace') });
    const config = {
      address,
      namespace: inject('temporalNamespace'),
      taskQueue: `ingress-crash-${process.pid}-${Date.now()}`,
      workflowBundlePath: inject('workflowBundlePath'),
      storePath,
      providerBaseURL: provider.url,
      runLog: join(dir, 'tool-runs.log'),
      idleTimeoutMs: 30_000,
    };
    const workers: ChildWorker[] = [];
    cleanups.push(() => Promise.all(workers.map((w) => w.stop(2_000))));
    workers.push(await startChildWorker(config));

    const handle = await client.workflow.start(agentSession, {
      workflowId: sessionWorkflowId(sessionId),
      taskQueue: config.taskQueue,
      args: [{ sessionId }],
    });
    cleanups.push(() => handle.terminate('test done'));
    await handle.signal(followupSignal, { content: 'answer slowly', messageId: 'first' });
    await waitForLog(store, sessionId, (log) => log.some((e) => e.type === 'request/sent'), 'the request', 30_000);
    await handle.signal(steerSignal, { content: 'steer before the kill', messageId: 'steer' });
    const beforeKill = await waitForLog(
      store,
      sessionId,
      (log) => count(log, 'inbox/enqueue', 'steer') === 1,
      'the steer logged while the answer is held',
      30_000,
    );
    expect(beforeKill.some((e) => e.type === 'assistant/message')).toBe(false);

    const [victim] = workers;
    victim?.kill('SIGKILL');
    expect((await victim?.exited)?.signal).toBe('SIGKILL');
    provider.release('first-answer');
    workers.push(await startChildWorker(config));

    const events = await waitForTurnEnd(store, sessionId, 1, 90_000);
    await waitForState(handle, (s) => s.status === 'idle' && s.lastTurnEnd?.turn === 1, 30_000);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(count(events, 'inbox/enqueue', 'steer')).toBe(1);
    expect(count(events, 'user/message', 'steer')).toBe(1);
    expect(events.find((e) => e.type === 'user/message' && e.messageId === 'steer')).toMatchObject({
      turn: 1,
      step: 2,
    });
    expect(events.filter((e) => e.type === 'assistant/message').map((e) => `${e.turn}.${e.step}`)).toEqual([
      '1.1',
      '1.2',
    ]);
    expect(events.find((e) => e.type === 'turn/end')).toMatchObject({ turn: 1, reason: 'completed' });
    await expectProviderSawTheLog(
      { provider, store, profile: scriptedProfile(provider.url), sessionIds: new Set([sessionId]) },
      [sessionId],
    );
    const mirror = await checkHistoryMirror(client, store, sessionId);
    expect(mirror.problem).toBeNull();
  }, 180_000);
});
