// Subagents under crashes, on real worker processes: a parent delegates to two children in parallel, each
// calling tools, and while one child sleeps and the other streams its answer, (a) the worker is SIGKILLed and
// a replacement starts, (b) of two workers on one queue and store, the one running a child's tool step is
// SIGKILLed, or (c) the Temporal dev server is killed and restarted. Each time the whole tree must check
// clean (test/helpers/chaos/check-trial.ts: one child per call, linked both ways, no orphan, nothing lost,
// twice or dangling, audits, mirrors) and the provider must have seen exactly what the logs derive.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { describe, inject, it, type TestContext } from 'vitest';
import { DELEGATE_TOOL_NAME, TOOL_OUTCOME_UNKNOWN, type SessionEvent } from '../../src/core/index.js';
import { signalGroup } from '../../src/local-stack/signal-group.js';
import { startScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { SESSION_PARENT_ATTRIBUTE } from '../../src/shared/search-attributes.js';
import { followupSignal, sessionWorkflowId } from '../../src/shared/session-messages.js';
import { PostgresSessionStore } from '../../src/stores/postgres-session-store.js';
import type { SessionStore } from '../../src/stores/session-store.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { agentSession } from '../../src/workflows/session-workflow.js';
import { sleep } from '../helpers/chaos/chaos-messages.js';
import { startChaosServer } from '../helpers/chaos/chaos-server.js';
import { checkTrial } from '../helpers/chaos/check-trial.js';
import { startChildWorker, type ChildWorker, type WorkerProcessConfig } from '../helpers/child-worker.js';
import { expectProviderSawTheLog, scriptedProfile, TEST_MODEL, waitForTurnEnd } from '../helpers/session-harness.js';

/** A SIGKILLed worker's activities are retried once their 10 s heartbeat timeout has passed. */
const SCENARIO_TIMEOUT_MS = 150_000;
const TURN_END_TIMEOUT_MS = 90_000;

type Kill = 'worker' | 'worker running a child step' | 'dev server';

const parentTask = '[p] Split the work between two subagents.';
const task = (tag: string, wait: string) =>
  `[${tag}] Echo "${tag}", then ${wait} a moment and answer in one line (the answer is long).`;

/**
 * The parent delegates to c1 and c2 at once. c1 echoes and sleeps 5 s (not idempotent); c2 echoes, naps,
 * then streams a 5 s answer — played twice at most, so a stream cut by the kill is played again in full.
 */
function script() {
  const slow = { chunkSize: 4, chunkDelayMs: 100 } as const;
  return {
    models: [TEST_MODEL],
    mode: 'match' as const,
    replies: [
      {
        match: { lastUserContains: '[p]' },
        text: 'Splitting it.',
        toolCalls: [
          { id: 'd1', name: DELEGATE_TOOL_NAME, arguments: { task: task('c1', 'sleep'), tools: ['echo', 'sleep'] } },
          { id: 'd2', name: DELEGATE_TOOL_NAME, arguments: { task: task('c2', 'nap') } },
        ],
      },
      { match: { lastUserContains: '[p]' }, text: 'Both subagents answered.' },
      {
        match: { lastUserContains: '[c1]' },
        toolCalls: [
          { id: 'c1-echo', name: 'echo', arguments: { text: 'c1' } },
          { id: 'c1-sleep', name: 'sleep', arguments: { ms: 5_000 } },
        ],
      },
      { match: { lastUserContains: '[c1]' }, text: 'c1: echoed, and the sleep ended as it did.' },
      {
        match: { lastUserContains: '[c2]' },
        toolCalls: [
          { id: 'c2-echo', name: 'echo', arguments: { text: 'c2' } },
          { id: 'c2-nap', name: 'nap', arguments: { ms: 300 } },
        ],
      },
      { match: { lastUserContains: '[c2]' }, text: 'c2 answers slowly. '.repeat(10), ...slow, repeat: 2 },
    ],
  };
}

const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T) =>
  events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type);
const turnEnds = (events: readonly SessionEvent[]) => ofType(events, 'turn/end').map((e) => `${e.turn}:${e.reason}`);

async function runScenario(kill: Kill, sessionId: string, { expect, onTestFinished }: TestContext): Promise<void> {
  const cleanups: Array<() => Promise<unknown>> = [];
  onTestFinished(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  });
  const dir = mkdtempSync(join(tmpdir(), 'dh-subagent-crash-'));
  cleanups.push(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
  const runLog = join(dir, 'tool-runs.log');
  const c1 = `${sessionId}.d1-1-0`;
  const c2 = `${sessionId}.d1-1-1`;

  // (c) restarts a server of its own, on its database file; (a) and (b) use the run's shared one.
  const dbFile = join(dir, 'temporal.db');
  let server =
    kill === 'dev server'
      ? await startChaosServer(inject('temporalCliPath'), dbFile, join(dir, 'temporal.log'))
      : { address: inject('temporalAddress'), namespace: inject('temporalNamespace'), pid: -1, stop: async () => {} };
  cleanups.push(() => server.stop());
  const provider = await startScriptedProvider({ script: script() });
  cleanups.push(() => provider.close());
  const profile = scriptedProfile(provider.url);
  // (b): two workers share the store, so it is PostgreSQL (as `dh worker`s on two hosts would share it).
  const postgres = kill === 'worker running a child step';
  const store: SessionStore = postgres
    ? await PostgresSessionStore.open(inject('postgresUrl'), { poolSize: 4 })
    : SqliteSessionStore.open(join(dir, 'sessions.db'));
  cleanups.push(() => store.close());
  const connection = await Connection.connect({ address: server.address });
  cleanups.push(() => connection.close());
  const client = new Client({ connection, namespace: server.namespace });
  const config: WorkerProcessConfig = {
    address: server.address,
    namespace: server.namespace,
    taskQueue: `subagent-crash-${sessionId}`,
    workflowBundlePath: inject('workflowBundlePath'),
    storePath: join(dir, 'sessions.db'),
    providerBaseURL: provider.url,
    runLog,
    idleTimeoutMs: 10_000,
    hostId: 'one-host',
    subagentDepth: 1,
    ...(postgres ? { storeUrl: inject('postgresUrl') } : {}),
  };
  const workers: ChildWorker[] = [];
  cleanups.push(() => Promise.all(workers.map((w) => w.stop(3_000))));
  const startWorker = async () => {
    const worker = await startChildWorker(config);
    workers.push(worker);
    return worker;
  };
  await Promise.all(postgres ? [startWorker(), startWorker()] : [startWorker()]);
  const diagnose = async (error: unknown) =>
    new Error(
      [
        (error as Error).message,
        ...(await Promise.all(
          [sessionId, c1, c2].map(async (id) => {
            const log = await store.read(id).catch(() => []);
            return `${id}: ${log.map((e) => e.type).join(', ') || '(no log)'}`;
          }),
        )),
        ...workers.map((w, i) => `worker #${i + 1} (pid ${w.pid}):\n${w.output()}`),
      ].join('\n'),
      { cause: error },
    );

  const handle = await client.workflow.start(agentSession, {
    workflowId: sessionWorkflowId(sessionId),
    taskQueue: config.taskQueue,
    args: [{ sessionId }],
  });
  cleanups.push(() => client.workflow.getHandle(handle.workflowId).terminate('test done'));
  await handle.signal(followupSignal, { content: parentTask, messageId: 'p1' });

  // The moment: c1's non-idempotent sleep is running and c2 is streaming its answer (the provider has its request).
  const deadline = Date.now() + 60_000;
  for (;;) {
    const [one, two] = await Promise.all([c1, c2].map((id) => store.read(id).catch(() => [] as SessionEvent[])));
    const sleeping =
      ofType(one ?? [], 'tool/start').some((s) => s.callId === 'c1-sleep') &&
      !ofType(one ?? [], 'tool/result').some((r) => r.callId === 'c1-sleep');
    const streaming =
      ofType(two ?? [], 'request/sent').some((r) => r.step === 2) &&
      !ofType(two ?? [], 'assistant/message').some((m) => m.step === 2) &&
      // Only c2's answering request holds its nap call.
      provider.requests().some((r) => r.body.includes('c2-nap'));
    if (sleeping && streaming) break;
    if (Date.now() > deadline) throw await diagnose(new Error('the children never reached the kill moment'));
    await sleep(50);
  }

  let victim: ChildWorker | undefined;
  if (kill === 'worker') {
    victim = workers[0];
    victim?.kill('SIGKILL');
    await victim?.exited;
    await startWorker();
  } else if (kill === 'worker running a child step') {
    // Whoever runs c1's tool step (the sleep) dies; the step must be retried on the other worker.
    const pending = (await client.workflow.getHandle(sessionWorkflowId(c1)).describe()).raw.pendingActivities ?? [];
    const identity = pending.find((a) => a.activityType?.name === 'toolStep')?.lastWorkerIdentity ?? '';
    victim = workers.find((w) => identity.startsWith(`${w.pid}@`));
    if (!victim)
      throw await diagnose(new Error(`no worker runs c1's tool step (identity ${JSON.stringify(identity)})`));
    victim.kill('SIGKILL');
    await victim.exited;
  } else {
    const port = Number(server.address.split(':').at(-1));
    signalGroup(server.pid, 'SIGKILL');
    await server.stop();
    await sleep(2_000);
    server = await startChaosServer(inject('temporalCliPath'), dbFile, join(dir, 'temporal.log'), port);
  }

  const events = await waitForTurnEnd(store, sessionId, 1, TURN_END_TIMEOUT_MS).catch(async (error: unknown) => {
    throw await diagnose(error);
  });
  // The parent's turn completed with both children's answers, each child linked to its call.
  expect(turnEnds(events)).toEqual(['1:completed']);
  expect(ofType(events, 'tool/start').map((s) => [s.callId, s.child])).toEqual([
    ['d1', c1],
    ['d2', c2],
  ]);
  expect(ofType(events, 'tool/result').map((r) => [r.callId, r.status, r.child?.sessionId, r.child?.reason])).toEqual([
    ['d1', 'ok', c1, 'completed'],
    ['d2', 'ok', c2, 'completed'],
  ]);
  for (const id of [c1, c2]) {
    const log = await store.read(id);
    expect(ofType(log, 'inbox/enqueue').map((e) => e.messageId)).toEqual(['delegated-task']);
    expect(turnEnds(log)).toEqual(['1:completed']);
  }
  // Exactly the two children under the parent (visibility may lag a moment behind the completions).
  const listed = async () => {
    const ids: string[] = [];
    const query = `${SESSION_PARENT_ATTRIBUTE.name} = "${sessionId}"`;
    for await (const execution of client.workflow.list({ query })) ids.push(execution.workflowId);
    return [...new Set(ids)].sort();
  };
  await expect.poll(listed, { timeout: 15_000 }).toEqual([c1, c2].map(sessionWorkflowId).sort());

  // A kill of c1's worker left its non-idempotent sleep's outcome unknown; it never ran twice.
  const toolRuns = readFileSync(runLog, 'utf8').split('\n').filter(Boolean);
  expect(toolRuns.filter((id) => id === 'c1-sleep')).toEqual(['c1-sleep']);
  const sleepResult = ofType(await store.read(c1), 'tool/result').find((r) => r.callId === 'c1-sleep');
  if (kill !== 'dev server') expect(sleepResult).toMatchObject({ status: 'interrupted', output: TOOL_OUTCOME_UNKNOWN });
  const bodies = provider
    .requests()
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => r.body);
  if (kill === 'worker') {
    // c2's answer was cut mid-stream and asked for again, the same request.
    const answering = bodies.filter((body) => body.includes('c2-nap'));
    expect(answering).toHaveLength(2);
    expect(answering[1]).toBe(answering[0]);
  }
  if (kill === 'worker running a child step' && victim) {
    // The retried tool step ran on the survivor.
    const history = await client.workflow.getHandle(sessionWorkflowId(c1)).fetchHistory();
    const scheduled = new Map<string, string>();
    const ranOn: string[] = [];
    for (const e of history.events ?? []) {
      const s = e.activityTaskScheduledEventAttributes;
      if (s) scheduled.set(String(e.eventId), s.activityType?.name ?? '');
      const started = e.activityTaskStartedEventAttributes;
      if (started && scheduled.get(String(started.scheduledEventId)) === 'toolStep') ranOn.push(started.identity ?? '');
    }
    expect(ranOn.length).toBeGreaterThan(0);
    expect(ranOn.every((identity) => !identity.startsWith(`${victim.pid}@`))).toBe(true);
  }

  // The whole tree's checks, as every chaos trial's; and the provider saw exactly what the logs derive.
  const check = await checkTrial({
    sessionId,
    events,
    acked: [{ kind: 'followup', messageId: 'p1', via: 'test', attempts: 1 }],
    providerBodies: bodies,
    toolRuns,
    idempotentCall: (callId) => callId.endsWith('-nap'),
    profile,
    store,
    client,
  });
  expect(check.problems).toEqual([]);
  expect(check.turnErrors).toBe(0);
  expect(check.audited).toBe(true);
  expect(check.children.map((c) => c.sessionId)).toEqual([c1, c2]);
  await expectProviderSawTheLog({ provider, store, profile, sessionIds: new Set([sessionId, c1, c2]) }, [
    sessionId,
    c1,
    c2,
  ]);
}

// Concurrent: each scenario has its own provider, store, task queue and workers, and spends most of its
// time waiting for a heartbeat timeout.
describe.concurrent('subagents under crashes: children running while something dies', () => {
  const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  it(
    '(a) the worker SIGKILLed mid-child (one child sleeping, one streaming), a replacement started',
    async (context) => {
      await runScenario('worker', `subcrash-a-${run}`, context);
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    "(b) two workers on one queue and store: the one running a child's tool step SIGKILLed",
    async (context) => {
      await runScenario('worker running a child step', `subcrash-b-${run}`, context);
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    '(c) the Temporal dev server SIGKILLed and restarted on its database while the children run',
    async (context) => {
      await runScenario('dev server', `subcrash-c-${run}`, context);
    },
    SCENARIO_TIMEOUT_MS,
  );
});
