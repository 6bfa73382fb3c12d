// Fifty sessions at once on a production-shaped cluster (temporal-server on PostgreSQL, not the dev server)
// with three worker processes of different host ids over one PostgreSQL store: steers and injects come
// from another process (the `temporal` CLI), sessions spread over the hosts, model steps run on their
// session's host (or, when it does not start them in time, on the shared model queue), tool steps stay on
// their session's host, and every session checks clean.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../../src/client/session-client.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { sessionWorkflowId } from '../../src/shared/session-messages.js';
import { modelQueueOfHost, modelTaskQueue } from '../../src/shared/task-queues.js';
import { PostgresSessionStore } from '../../src/stores/postgres-session-store.js';
import { sendThroughCli, type AckedMessage } from '../helpers/chaos/chaos-messages.js';
import { checkTrial } from '../helpers/chaos/check-trial.js';
import { activityRuns, createFleet, pidOfIdentity, type Fleet } from '../helpers/cluster-fleet.js';
import { ofType, turnEnds } from '../helpers/log-views.js';
import { scriptedProfile, TEST_MODEL, waitForTurnEnd } from '../helpers/session-harness.js';
import { startTestCluster, type TestCluster } from '../helpers/test-cluster.js';

const SESSIONS = 50;
const HOSTS = ['host-a', 'host-b', 'host-c'] as const;
const TASK_QUEUE = 'cluster-sessions';
/** How many `temporal` CLI processes send at once. */
const CLI_PARALLEL = 6;

const tag = (i: number) => `[cs-${i}]`;
const callId = (i: number, what: string) => `cs${i}-${what}`;

/**
 * Per session, in the order its model requests consume them (every message of session i carries its tag,
 * so its replies are played in order whichever message is last): turn 1 echoes and sleeps (not idempotent),
 * then naps after the steer, then answers; turn 2 (the second followup, carrying the injected note) answers.
 */
function script() {
  const replies = [];
  for (let i = 0; i < SESSIONS; i++) {
    const match = { lastUserContains: tag(i) };
    replies.push(
      {
        match,
        text: 'Echoing, then sleeping.',
        toolCalls: [
          { id: callId(i, 'echo'), name: 'echo', arguments: { text: tag(i) } },
          { id: callId(i, 'sleep'), name: 'sleep', arguments: { ms: 4_000 } },
        ],
      },
      { match, toolCalls: [{ id: callId(i, 'nap'), name: 'nap', arguments: { ms: 200 } }] },
      { match, text: `Turn one of ${tag(i)} done.` },
      { match, text: `Turn two of ${tag(i)} done, with the note.` },
    );
  }
  // A model step retried on a loaded machine (a heartbeat missed, a worker slow to answer) sends its request
  // again: it gets the answer it got before, as a deterministic model would, instead of the next step's reply.
  return { models: [TEST_MODEL], mode: 'match' as const, retries: 'same-reply' as const, replies };
}

/** Runs `each` over `items`, at most `parallel` at a time. */
async function inBatches<T, R>(items: readonly T[], parallel: number, each: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await each(items[index] as T);
      }
    }),
  );
  return results;
}

describe('a production-shaped cluster: temporal-server on PostgreSQL, three worker hosts', () => {
  const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  const sessionId = (i: number) => `cs-${run}-${i}`;
  const cleanups: Array<() => Promise<unknown>> = [];
  let testCluster: TestCluster;
  let provider: ScriptedProvider;
  let store: PostgresSessionStore;
  let client: Client;
  let dir: string;
  let fleet: Fleet;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dh-cluster-sessions-'));
    cleanups.push(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
    testCluster = await startTestCluster(
      { server: inject('temporalServerPath'), sqlTool: inject('temporalSqlToolPath') },
      inject('postgresUrl'),
      'sessions',
    );
    cleanups.push(() => testCluster.dispose());
    provider = await startScriptedProvider({ script: script() });
    cleanups.push(() => provider.close());
    store = await PostgresSessionStore.open(testCluster.storeUrl, { poolSize: 4 });
    cleanups.push(() => store.close());
    const connection = await Connection.connect({ address: testCluster.cluster.address });
    cleanups.push(() => connection.close());
    client = new Client({ connection, namespace: testCluster.cluster.namespace });
    writeFileSync(join(dir, 'tool-runs.log'), '');
    fleet = createFleet({
      address: testCluster.cluster.address,
      namespace: testCluster.cluster.namespace,
      taskQueue: TASK_QUEUE,
      workflowBundlePath: inject('workflowBundlePath'),
      storePath: join(dir, 'unused.db'),
      storeUrl: testCluster.storeUrl,
      providerBaseURL: provider.url,
      runLog: join(dir, 'tool-runs.log'),
      idleTimeoutMs: 30_000,
    });
    cleanups.push(() => fleet.stopAll(5_000));
    await Promise.all(HOSTS.map((hostId) => fleet.start(hostId)));
  }, 240_000);

  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }, 120_000);

  it('50 sessions at once: tool turns, steers and injects from the temporal CLI, spread over hosts, all checked clean', async () => {
    const { address, namespace } = testCluster.cluster;
    const sessions = new SessionClient(client, { taskQueue: TASK_QUEUE });
    const ids = Array.from({ length: SESSIONS }, (_, i) => i);
    const acked = new Map<number, AckedMessage[]>(ids.map((i) => [i, []]));
    const cli = (i: number) => ({
      cliPath: inject('temporalCliPath'),
      address,
      namespace,
      workflowId: sessionWorkflowId(sessionId(i)),
    });
    const diagnose = async (error: unknown) => {
      const lines = await Promise.all(
        ids.map(async (i) => `${sessionId(i)}: ${turnEnds(await store.read(sessionId(i)).catch(() => [])).join(' ')}`),
      );
      return new Error([(error as Error).message, ...lines, fleet.outputs(), testCluster.cluster.output()].join('\n'), {
        cause: error,
      });
    };

    // All fifty start at once; each one's steer goes out through the CLI as soon as its start is acknowledged,
    // while its first turn is still running (it sleeps 4 s).
    await Promise.all(
      ids.map(async (i) => {
        await sessions.followup(sessionId(i), `${tag(i)} Echo, then sleep.`, { messageId: `f1-${i}`, start: true });
        acked.get(i)?.push({ kind: 'followup', messageId: `f1-${i}`, via: 'test', attempts: 1 });
      }),
    );
    await inBatches(ids, CLI_PARALLEL, async (i) => {
      const steer = { kind: 'steer' as const, messageId: `s-${i}`, content: `${tag(i)} Then nap briefly.` };
      acked.get(i)?.push(await sendThroughCli(cli(i), steer));
    });
    const firstTurns = await Promise.all(
      ids.map((i) =>
        waitForTurnEnd(store, sessionId(i), 1, 180_000).catch(async (e: unknown) => Promise.reject(await diagnose(e))),
      ),
    );
    for (const [i, events] of firstTurns.entries()) {
      expect(turnEnds(events), sessionId(i)).toEqual(['1:completed']);
      // The steer entered the running turn: claimed before its end, and the nap it asked for ran in it.
      const claimedSteer = ofType(events, 'inbox/claim').find((c) => c.messageIds.includes(`s-${i}`));
      expect(claimedSteer?.turn, sessionId(i)).toBe(1);
      expect(
        ofType(events, 'tool/result').map((r) => r.callId),
        sessionId(i),
      ).toEqual([callId(i, 'echo'), callId(i, 'sleep'), callId(i, 'nap')]);
    }

    // An inject rides along without waking the session; the next followup's request carries it.
    await inBatches(ids, CLI_PARALLEL, async (i) => {
      const note = { kind: 'inject' as const, messageId: `n-${i}`, content: `${tag(i)} Note: the build is green.` };
      acked.get(i)?.push(await sendThroughCli(cli(i), note));
    });
    await expect
      .poll(
        async () =>
          (await store.read(sessionId(SESSIONS - 1))).some(
            (e) => e.type === 'inbox/enqueue' && e.messageId === `n-${SESSIONS - 1}`,
          ),
        { timeout: 30_000 },
      )
      .toBe(true);
    for (const i of ids) expect(ofType(await store.read(sessionId(i)), 'turn/start'), sessionId(i)).toHaveLength(1);
    await Promise.all(
      ids.map(async (i) => {
        await sessions.followup(sessionId(i), `${tag(i)} And now?`, { messageId: `f2-${i}` });
        acked.get(i)?.push({ kind: 'followup', messageId: `f2-${i}`, via: 'test', attempts: 1 });
      }),
    );
    const logs = await Promise.all(
      ids.map((i) =>
        waitForTurnEnd(store, sessionId(i), 2, 180_000).catch(async (e: unknown) => Promise.reject(await diagnose(e))),
      ),
    );

    // Every session: both turns completed, each message claimed once, the gate explained, history mirrors log, audit clean.
    const bodies = provider
      .requests()
      .filter((r) => r.path.endsWith('/chat/completions'))
      .map((r) => r.body);
    const toolRuns = readFileSync(join(dir, 'tool-runs.log'), 'utf8').split('\n').filter(Boolean);
    const hostOf = new Map<number, string>();
    const pidsOf = new Map(HOSTS.map((host) => [fleet.queue(host), new Set(fleet.pids(host))]));
    const modelStepRanOn = new Set<number>();
    let modelStepsOnHost = 0;
    for (const [i, events] of logs.entries()) {
      const id = sessionId(i);
      const errors = events.flatMap((e) =>
        (e.type === 'turn/end' || e.type === 'step/end') && e.error !== undefined
          ? [`${e.type}: ${e.error.message}`]
          : [],
      );
      expect(turnEnds(events), `${id} ${errors.join('; ')}`).toEqual(['1:completed', '2:completed']);
      const note = ofType(events, 'inbox/claim').find((c) => c.messageIds.includes(`n-${i}`));
      expect(note?.turn, id).toBe(2);
      const check = await checkTrial({
        sessionId: id,
        events,
        acked: acked.get(i) ?? [],
        providerBodies: bodies.filter((body) => body.includes(tag(i))),
        toolRuns: toolRuns.filter((run) => run.startsWith(`cs${i}-`)),
        idempotentCall: (call) => call.endsWith('-nap'),
        profile: scriptedProfile(provider.url),
        store,
        client,
      });
      expect(check.problems, id).toEqual([]);
      expect(check.audited, id).toBe(true);

      // Tool steps ran on the session's host only; model steps on its host's model queue, taken by its host,
      // or on the shared model queue (a step the host left unstarted for 5 s), taken by any worker.
      const activities = await activityRuns(client, id);
      const toolSteps = activities.filter((a) => a.type === 'toolStep');
      expect(toolSteps.length, id).toBeGreaterThan(0);
      const queues = new Set(toolSteps.map((a) => a.taskQueue));
      expect(queues.size, id).toBe(1);
      const [queue] = [...queues] as [string];
      const hostPids = pidsOf.get(queue);
      expect(hostPids, `${id} tool queue ${queue}`).toBeDefined();
      hostOf.set(i, queue);
      for (const step of toolSteps) expect(hostPids?.has(pidOfIdentity(step.identity)), id).toBe(true);
      const hostModelQueue = modelQueueOfHost(TASK_QUEUE, queue);
      for (const step of activities.filter((a) => a.type === 'modelStep' && a.identity !== null)) {
        const pid = pidOfIdentity(step.identity);
        modelStepRanOn.add(pid);
        if (step.taskQueue === hostModelQueue) {
          expect(hostPids?.has(pid), `${id}: model step on its host's queue, by ${step.identity}`).toBe(true);
          modelStepsOnHost++;
        } else expect(step.taskQueue, id).toBe(modelTaskQueue(TASK_QUEUE));
      }
    }
    // The sessions are spread over all three hosts, so every worker ran model steps, nearly all for its own.
    expect(new Set(hostOf.values()).size).toBe(HOSTS.length);
    expect([...modelStepRanOn].sort()).toEqual(HOSTS.flatMap((host) => fleet.pids(host)).sort());
    expect(modelStepsOnHost).toBeGreaterThan(0);
    console.log(JSON.stringify({ sessions: SESSIONS, provider: provider.stats() }));
    // Each non-idempotent sleep ran once.
    for (const i of ids)
      expect(
        toolRuns.filter((r) => r === callId(i, 'sleep')),
        sessionId(i),
      ).toHaveLength(1);
  }, 420_000);
});
