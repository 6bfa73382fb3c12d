// Crash safety on a real Temporal server: a worker in a child process SIGKILLs itself at a named
// failpoint mid-turn, a fresh worker takes over the task queue, and the turn must finish with a clean
// log — nothing twice, nothing lost, every recorded request re-derivable, the history mirroring the log.
import { describe, inject, it, type ExpectStatic, type TestContext } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import type { Failpoint } from '../../src/activities/failpoints.js';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import { TOOL_OUTCOME_UNKNOWN, type EventOf, type SessionEvent } from '../../src/core/index.js';
import type { Script } from '../../src/scripted-provider/script.js';
import { startScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { followupSignal, sessionWorkflowId } from '../../src/shared/session-messages.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { agentSession } from '../../src/workflows/session-workflow.js';
import { startChildWorker, type ChildWorker, type WorkerProcessConfig } from '../helpers/child-worker.js';
import {
  expectProviderSawTheLog,
  scriptedProfile,
  TEST_MODEL,
  waitForState,
  waitForTurnEnd,
} from '../helpers/session-harness.js';

/**
 * After a SIGKILL the server re-dispatches a model/tool activity only once its 10 s heartbeat timeout has
 * passed (then 1 s of retry backoff): a scenario takes ~15-20 s, most of it waiting on the server.
 */
const SCENARIO_TIMEOUT_MS = 90_000;
const TURN_END_TIMEOUT_MS = 60_000;

interface CrashScenario {
  readonly sessionId: string;
  readonly failpoint: Failpoint;
  /** The followup that starts turn 1. */
  readonly prompt: string;
  /** Played in order by the scripted provider. */
  readonly replies: Script['replies'];
}

interface CrashRun {
  readonly events: SessionEvent[];
  /** Chat-completion bodies the provider received, in arrival order. */
  readonly bodies: string[];
  /** Lines of the sleep tools' run log (one call id per run). */
  readonly toolRuns: string[];
}

const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T): EventOf<T>[] =>
  events.filter((e): e is EventOf<T> => e.type === type);

const TIMED_OUT = Symbol('timed out');

/** `promise`'s value, or TIMED_OUT if it has not settled within `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Runs turn 1 of a fresh session on a child worker armed with `failpoint`, checks that it died there by
 * SIGKILL, lets a fresh unarmed worker finish the turn, and runs the checks every crash must pass.
 */
async function runCrash(scenario: CrashScenario, { expect, onTestFinished }: TestContext): Promise<CrashRun> {
  const { sessionId, failpoint } = scenario;
  // Scenarios run concurrently: each cleans up after itself, in reverse order, whatever happened.
  const cleanups: Array<() => Promise<void>> = [];
  onTestFinished(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  });
  const dir = mkdtempSync(join(tmpdir(), 'dh-crash-'));
  cleanups.push(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
  const storePath = join(dir, 'sessions.db');
  const runLog = join(dir, 'tool-runs.log');
  const failpointLog = join(dir, 'failpoints.log');

  const provider = await startScriptedProvider({
    script: { models: [TEST_MODEL], mode: 'ordered', replies: scenario.replies },
  });
  cleanups.push(() => provider.close());
  const profile = scriptedProfile(provider.url);
  // The test's own connection to the file the workers write (WAL: readers never block them).
  const store = SqliteSessionStore.open(storePath);
  cleanups.push(() => store.close());
  const address = inject('temporalAddress');
  const namespace = inject('temporalNamespace');
  const connection = await Connection.connect({ address });
  cleanups.push(() => connection.close());
  const client = new Client({ connection, namespace });
  const taskQueue = `crash-${sessionId}-${process.pid}-${Date.now()}`;
  const config: WorkerProcessConfig = {
    address,
    namespace,
    taskQueue,
    workflowBundlePath: inject('workflowBundlePath'),
    storePath,
    providerBaseURL: provider.url,
    runLog,
    idleTimeoutMs: 5_000,
  };

  const children: ChildWorker[] = [];
  cleanups.push(async () => {
    await Promise.all(children.map((c) => c.stop(2_000)));
  });
  // What a failure message needs: the workers' output, the workflow's pending activities and last
  // workflow-task failure, and the log as far as it got.
  const workflow: { handle?: WorkflowHandle<typeof agentSession> } = {};
  const diagnose = async (): Promise<string> => {
    const lines = children.map((c, i) => `worker #${i + 1} (pid ${c.pid}):\n${c.output()}`);
    const handle = workflow.handle;
    if (handle) {
      try {
        const { raw, status } = await handle.describe();
        const pending = (raw.pendingActivities ?? []).map(
          (a) =>
            `${a.activityType?.name ?? '?'} (attempt ${a.attempt ?? '?'}, state ${a.state ?? '?'}, last failure: ` +
            `${a.lastFailure?.message ?? 'none'})`,
        );
        lines.push(`workflow ${status.name}; pending activities: ${pending.join('; ') || 'none'}`);
        const history = await handle.fetchHistory();
        const taskFailure = (history.events ?? [])
          .flatMap((e) => (e.workflowTaskFailedEventAttributes ? [e.workflowTaskFailedEventAttributes] : []))
          .at(-1);
        if (taskFailure) lines.push(`last workflow task failure: ${taskFailure.failure?.message ?? '?'}`);
      } catch (error) {
        lines.push(`could not describe the workflow: ${String(error)}`);
      }
    }
    const events = await store.read(sessionId).catch(() => []);
    lines.push(`log: ${events.map((e) => e.type).join(', ') || '(empty)'}`);
    return lines.join('\n');
  };

  const spawnedAt = Date.now();
  const crashing = await startChildWorker(config, { failpoints: [failpoint], failpointLog });
  children.push(crashing);
  const readyMs = Date.now() - spawnedAt;
  const handle = await client.workflow.start(agentSession, {
    workflowId: sessionWorkflowId(sessionId),
    taskQueue,
    args: [{ sessionId }],
  });
  workflow.handle = handle;
  cleanups.push(() => handle.terminate('crash test done').then(() => undefined));
  const startedAt = Date.now();
  await handle.signal(followupSignal, { content: scenario.prompt });

  const crash = await within(crashing.exited, 30_000);
  if (crash === TIMED_OUT)
    throw new Error(`the armed worker did not die at ${failpoint} within 30 s\n${await diagnose()}`);
  const crashMs = Date.now() - startedAt;
  if (crash.signal !== 'SIGKILL')
    throw new Error(`the armed worker exited with ${JSON.stringify(crash)}\n${await diagnose()}`);
  const hits = readFileSync(failpointLog, 'utf8').split('\n').filter(Boolean);
  expect(hits.map((line) => line.split(' ').slice(0, 2).join(' '))).toEqual([`${failpoint} ${crashing.pid}`]);

  const fresh = await startChildWorker(config);
  children.push(fresh);
  const events = await waitForTurnEnd(store, sessionId, 1, TURN_END_TIMEOUT_MS).catch(async (error: unknown) => {
    throw new Error(`${(error as Error).message}\n${await diagnose()}`, { cause: error });
  });
  // The workflow has absorbed the closing activity (so its history holds every receipt).
  await waitForState(handle, (s) => s.status === 'idle' && s.lastTurnEnd?.turn === 1, 30_000);
  const recoverMs = Date.now() - startedAt - crashMs;

  expectCleanLog(expect, events);
  const turnEnds = ofType(events, 'turn/end').map((e) => `${e.turn}:${e.reason}`);
  expect(turnEnds).toEqual(['1:completed']);
  await expectProviderSawTheLog({ provider, store, profile, sessionIds: new Set([sessionId]) }, [sessionId]);
  const mirror = await checkHistoryMirror(client, store, sessionId);
  expect(mirror.problem).toBeNull();
  expect(mirror.ok).toBe(true);

  // SIGTERM drains the fresh worker and it exits cleanly (the armed one is already gone).
  const stoppingAt = Date.now();
  const stopped = await fresh.stop();
  if (stopped.code !== 0)
    throw new Error(`the fresh worker stopped with ${JSON.stringify(stopped)}\n${await diagnose()}`);
  const stopMs = Date.now() - stoppingAt;

  let toolRuns: string[] = [];
  try {
    toolRuns = readFileSync(runLog, 'utf8').split('\n').filter(Boolean);
  } catch {
    // No tool ran.
  }
  const bodies = provider
    .requests()
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => r.body);
  console.log(
    `${sessionId}: worker ready in ${readyMs} ms, killed at ${failpoint} ${crashMs} ms after the followup, ` +
      `turn ended ${recoverMs} ms later, fresh worker stopped in ${stopMs} ms ` +
      `(${bodies.length} provider requests, ${events.length} events)`,
  );
  return { events, bodies, toolRuns };
}

/** Structural checks every crashed-and-recovered log must pass. */
function expectCleanLog(expect: ExpectStatic, events: readonly SessionEvent[]): void {
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
  const keys = events.map((e) => e.key);
  expect(keys.filter((key, i) => keys.indexOf(key) !== i)).toEqual([]);

  const calls = ofType(events, 'assistant/message').flatMap((m) => m.toolCalls.map((c) => c.id));
  const results = ofType(events, 'tool/result').map((r) => r.callId);
  expect([...results].sort()).toEqual([...calls].sort()); // exactly one result per call, none unasked
  const starts = ofType(events, 'tool/start').map((s) => s.callId);
  expect(new Set(starts).size).toBe(starts.length);

  // Every compaction that started ended.
  expect(ofType(events, 'compact/end').map((e) => e.compactionId)).toEqual(
    ofType(events, 'compact/start').map((e) => e.compactionId),
  );
  const steps = (type: 'step/start' | 'step/end') => ofType(events, type).map((e) => `${e.turn}.${e.step}`);
  expect(steps('step/end')).toEqual(steps('step/start'));
  for (const step of steps('step/start')) {
    const [turn, n] = step.split('.').map(Number);
    const answers = ofType(events, 'assistant/message').filter((m) => m.turn === turn && m.step === n);
    // A step ended by a context overflow has no answer: it ends with the error instead.
    const overflowed = ofType(events, 'step/end').some(
      (e) => e.turn === turn && e.step === n && e.error?.code === 'CONTEXT_LENGTH_EXCEEDED',
    );
    expect(answers, `assistant answers of step ${step}`).toHaveLength(overflowed ? 0 : 1);
    const sent = ofType(events, 'request/sent').filter((m) => m.turn === turn && m.step === n);
    expect(sent, `request/sent of step ${step}`).toHaveLength(1);
  }
}

// Concurrent: each scenario has its own provider, store, task queue and workers, and spends most of its
// time waiting for the server's heartbeat timeout, so five overlap well even on two cores (~25 s, not ~75 s).
describe.concurrent('crash safety: a worker SIGKILLed at a failpoint, a fresh one finishing the turn', () => {
  it(
    'killed mid-stream: the same request is sent again and the turn completes with one answer',
    async (context) => {
      const { expect } = context;
      const run = await runCrash(
        {
          sessionId: 'crash-model-streaming',
          failpoint: 'model-streaming',
          prompt: 'tell me a story',
          replies: [
            // Played twice: the first stream dies with the worker after its first delta.
            { text: 'once upon a time there was a log that never lied', chunkSize: 4, chunkDelayMs: 20, repeat: 2 },
          ],
        },
        context,
      );
      expect(run.bodies).toHaveLength(2);
      expect(run.bodies[1]).toBe(run.bodies[0]);
      const [answer, ...more] = ofType(run.events, 'assistant/message');
      expect(more).toEqual([]);
      expect(answer).toMatchObject({
        turn: 1,
        step: 1,
        content: 'once upon a time there was a log that never lied',
        finishReason: 'stop',
      });
      expect(answer?.interrupted).toBeUndefined();
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'killed after the answer was appended: the retry finds it in the log and does not call the provider',
    async (context) => {
      const { expect } = context;
      const run = await runCrash(
        {
          sessionId: 'crash-model-after-append',
          failpoint: 'model-after-append',
          prompt: 'say hi',
          replies: [{ text: 'hi' }],
        },
        context,
      );
      expect(run.bodies).toHaveLength(1);
      expect(ofType(run.events, 'assistant/message').map((m) => m.content)).toEqual(['hi']);
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'killed mid-tool (not idempotent): the call is answered interrupted, outcome unknown, and never re-run',
    async (context) => {
      const { expect } = context;
      const run = await runCrash(
        {
          sessionId: 'crash-tool-running',
          failpoint: 'tool-running',
          prompt: 'wait a while',
          replies: [
            { toolCalls: [{ id: 's1', name: 'sleep', arguments: '{"ms":5000}' }] },
            { text: 'the wait was interrupted; not repeating it' },
          ],
        },
        context,
      );
      expect(run.toolRuns).toEqual(['s1']);
      const results = ofType(run.events, 'tool/result');
      expect(results).toHaveLength(1);
      expect(results[0]).toMatchObject({ callId: 's1', status: 'interrupted', output: TOOL_OUTCOME_UNKNOWN });
      // The model got a next step that saw the interrupted result, and answered.
      expect(run.bodies).toHaveLength(2);
      expect(ofType(run.events, 'assistant/message').map((m) => `${m.step}:${m.toolCalls.length}`)).toEqual([
        '1:1',
        '2:0',
      ]);
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'killed mid-tool (idempotent): the call runs again and its result is ok',
    async (context) => {
      const { expect } = context;
      const run = await runCrash(
        {
          sessionId: 'crash-tool-idempotent',
          failpoint: 'tool-running',
          prompt: 'take a nap',
          replies: [{ toolCalls: [{ id: 'n1', name: 'nap', arguments: '{"ms":1500}' }] }, { text: 'rested' }],
        },
        context,
      );
      expect(run.toolRuns).toEqual(['n1', 'n1']);
      expect(ofType(run.events, 'tool/start')).toHaveLength(1);
      const results = ofType(run.events, 'tool/result');
      expect(results).toHaveLength(1);
      expect(results[0]).toMatchObject({ callId: 'n1', status: 'ok', output: 'slept 1500 ms' });
      expect(run.bodies).toHaveLength(2);
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'killed mid-tool inside the model step (quick, not idempotent): answered interrupted, never re-run, no provider call again',
    async (context) => {
      const { expect } = context;
      const run = await runCrash(
        {
          sessionId: 'crash-quick-tool-running',
          failpoint: 'tool-running',
          prompt: 'wait a while, quickly',
          replies: [
            { toolCalls: [{ id: 'q1', name: 'quick_sleep', arguments: '{"ms":5000}' }] },
            { text: 'the wait was interrupted; not repeating it' },
          ],
        },
        context,
      );
      expect(run.toolRuns).toEqual(['q1']);
      expect(ofType(run.events, 'tool/result')).toEqual([
        expect.objectContaining({ callId: 'q1', status: 'interrupted', output: TOOL_OUTCOME_UNKNOWN }),
      ]);
      // The retried model step found its answer logged: one request for step 1, one for step 2.
      expect(run.bodies).toHaveLength(2);
      expect(ofType(run.events, 'step/end').map((e) => e.step)).toEqual([1, 2]);
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'killed mid-tool inside the model step (quick, idempotent): the call runs again, once logged',
    async (context) => {
      const { expect } = context;
      const run = await runCrash(
        {
          sessionId: 'crash-quick-tool-idempotent',
          failpoint: 'tool-running',
          prompt: 'take a quick nap',
          replies: [{ toolCalls: [{ id: 'qn1', name: 'quick_nap', arguments: '{"ms":1500}' }] }, { text: 'rested' }],
        },
        context,
      );
      expect(run.toolRuns).toEqual(['qn1', 'qn1']);
      expect(ofType(run.events, 'tool/start')).toHaveLength(1);
      expect(ofType(run.events, 'tool/result').map((r) => `${r.callId}:${r.status}`)).toEqual(['qn1:ok']);
      expect(run.bodies).toHaveLength(2);
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'killed after a tool result was appended: no duplicate result, the rest of the step runs once, it ends once',
    async (context) => {
      const { expect } = context;
      const run = await runCrash(
        {
          sessionId: 'crash-tool-after-append',
          failpoint: 'tool-after-append',
          prompt: 'echo then wait',
          replies: [
            {
              toolCalls: [
                { id: 'e1', name: 'echo', arguments: '{"text":"first"}' },
                { id: 's2', name: 'sleep', arguments: '{"ms":100}' },
              ],
            },
            { text: 'done' },
          ],
        },
        context,
      );
      // The crash came after e1's result; s2 had not started, so it runs (once) on the fresh worker.
      expect(run.toolRuns).toEqual(['s2']);
      const results = ofType(run.events, 'tool/result').map((r) => `${r.callId}:${r.status}`);
      expect(results).toEqual(['e1:ok', 's2:ok']);
      expect(ofType(run.events, 'step/end').filter((e) => e.step === 1)).toHaveLength(1);
      expect(run.bodies).toHaveLength(2);
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'killed inside a compaction (mid-summary): the retry finishes the same compaction, nothing half-applied',
    async (context) => {
      const { expect } = context;
      const run = await runCrash(
        {
          sessionId: 'crash-compaction',
          failpoint: 'compaction-summarizing',
          prompt: 'echo something, then carry on',
          replies: [
            { toolCalls: [{ id: 'e1', name: 'echo', arguments: '{"text":"before the overflow"}' }] },
            {
              fault: {
                kind: 'status',
                status: 400,
                code: 'context_length_exceeded',
                message: "This model's maximum context length is 1000 tokens.",
              },
            },
            // The summary, streamed twice: the first stream dies with the worker.
            { text: 'The user asked for an echo; it worked.', chunkSize: 4, chunkDelayMs: 20, repeat: 2 },
            { text: 'carrying on after the compaction' },
          ],
        },
        context,
      );
      const starts = ofType(run.events, 'compact/start');
      expect(starts).toHaveLength(1);
      expect(ofType(run.events, 'compact/end')).toMatchObject([
        { compactionId: starts[0]?.compactionId, outcome: 'applied' },
      ]);
      expect(ofType(run.events, 'compact/summary')).toHaveLength(1);
      expect(ofType(run.events, 'surface/replace')).toHaveLength(1);
      expect(ofType(run.events, 'assistant/message').at(-1)).toMatchObject({
        step: 3,
        content: 'carrying on after the compaction',
      });
    },
    SCENARIO_TIMEOUT_MS,
  );
});
