// Failures on a production-shaped cluster (temporal-server on PostgreSQL, three hosts' worker processes):
// a host's worker SIGKILLed (its tool steps wait for that host, its sessions' model steps go on elsewhere),
// the server SIGKILLed and restarted mid-run, and a rolling restart of every worker under load. Each
// session must end every turn and check clean (test/helpers/chaos/check-trial.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { TOOL_OUTCOME_UNKNOWN, type SessionEvent } from '../../src/core/index.js';
import type { Script } from '../../src/scripted-provider/script.js';
import { PostgresSessionStore } from '../../src/stores/postgres-session-store.js';
import { sleep } from '../helpers/chaos/chaos-messages.js';
import { ZERO_COUNTS } from '../helpers/chaos/check-trial.js';
import {
  activityRuns,
  openedOnQueue,
  pendingActivities,
  pidOfIdentity,
  type ActivityRun,
} from '../helpers/cluster-fleet.js';
import {
  checkSessions,
  startClusterTrial,
  until,
  untilAllSettled,
  type ClusterTrial,
  type SessionCheck,
} from '../helpers/cluster-trial.js';
import { ofType, turnEnds } from '../helpers/log-views.js';
import { TEST_MODEL } from '../helpers/session-harness.js';
import { startTestCluster, type TestCluster } from '../helpers/test-cluster.js';

const HOSTS = ['host-a', 'host-b', 'host-c'] as const;
/** Each scenario waits out at least one 10 s heartbeat timeout on two shared cores. */
const SCENARIO_TIMEOUT_MS = 180_000;
const SETTLE_TIMEOUT_MS = 100_000;

type Reply = Script['replies'][number];
const toolResult = (events: readonly SessionEvent[], callId: string) =>
  ofType(events, 'tool/result').find((r) => r.callId === callId);
const running = (events: readonly SessionEvent[], callId: string) =>
  ofType(events, 'tool/start').some((s) => s.callId === callId) && !toolResult(events, callId);
/** The id in a session id's last part (`…-k3` → `k3`): its script tag is `[k3]`. */
const tagOf = (sessionId: string) => sessionId.slice(sessionId.lastIndexOf('-') + 1);
const pidsOf = (runs: readonly ActivityRun[], type: string) =>
  runs.filter((r) => r.type === type && r.identity !== null).map((r) => pidOfIdentity(r.identity));

function expectClean(checks: readonly SessionCheck[]): void {
  for (const check of checks) {
    expect(check.problems, check.sessionId).toEqual([]);
    expect(check.counts, check.sessionId).toEqual(ZERO_COUNTS);
    expect(check.turnErrors, check.sessionId).toBe(0);
    expect(check.audited, check.sessionId).toBe(true);
  }
}

describe('cluster failures: three hosts on temporal-server with PostgreSQL', () => {
  let testCluster: TestCluster;
  let store: PostgresSessionStore;
  let connection: Connection;
  let client: Client;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dh-cluster-failures-'));
    testCluster = await startTestCluster(
      { server: inject('temporalServerPath'), sqlTool: inject('temporalSqlToolPath') },
      inject('postgresUrl'),
      'cluster_fail',
    );
    store = await PostgresSessionStore.open(testCluster.storeUrl, { poolSize: 4 });
    connection = await Connection.connect({ address: testCluster.cluster.address });
    client = new Client({ connection, namespace: testCluster.cluster.namespace });
  }, 180_000);

  afterAll(async () => {
    await connection?.close().catch(() => undefined);
    await store?.close().catch(() => undefined);
    await testCluster?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  async function trialOf(name: string, script: Script, onTestFinished: (fn: () => Promise<void>) => void) {
    const trial = await startClusterTrial({
      name,
      script,
      address: testCluster.cluster.address,
      namespace: testCluster.cluster.namespace,
      storeUrl: testCluster.storeUrl,
      workflowBundlePath: inject('workflowBundlePath'),
      dir,
      client,
      store,
    });
    onTestFinished(() => trial.close());
    return trial;
  }

  /** Adds the logs of the sessions and every worker's output to a failure. */
  async function diagnose(trial: ClusterTrial, sessionIds: readonly string[], error: unknown): Promise<Error> {
    const logs = await Promise.all(
      sessionIds.map(async (id) => {
        const log = await store.read(id).catch(() => []);
        return `${id}: ${log.map((e) => e.type).join(', ') || '(no log)'}`;
      }),
    );
    return new Error([(error as Error).message, ...logs, trial.fleet.outputs()].join('\n'), { cause: error });
  }

  it(
    "a host's worker SIGKILLed: its tool steps wait for a worker of that host, its sessions' model steps go on elsewhere",
    async ({ onTestFinished }) => {
      const sleepMs = 20_000;
      const replies: Reply[] = [];
      for (let i = 0; i < 40; i++) {
        const k = `k${i}`;
        replies.push(
          {
            match: { lastUserContains: `[${k}] t1` },
            toolCalls: [
              { id: `${k}-echo`, name: 'echo', arguments: { text: k } },
              { id: `${k}-sleep`, name: 'sleep', arguments: { ms: sleepMs } },
            ],
          },
          { match: { lastUserContains: `[${k}] t1` }, text: `${k}: the sleep ended as it did.`, repeat: 3 },
          { match: { lastUserContains: `[${k}] q1` }, text: `${k}: answered while its host was down.`, repeat: 3 },
          {
            match: { lastUserContains: `[${k}] q2` },
            toolCalls: [{ id: `${k}-q2-echo`, name: 'echo', arguments: { text: `${k} q2` } }],
          },
          { match: { lastUserContains: `[${k}] q2` }, text: `${k}: echoed once its host was back.`, repeat: 3 },
        );
      }
      const trial = await trialOf('host-kill', { models: [TEST_MODEL], mode: 'match', replies }, onTestFinished);
      const { fleet } = trial;
      await Promise.all(HOSTS.map((h) => fleet.start(h)));

      // Sessions are pinned to the host of the worker that opens them: open until host-b has four.
      const hostOf = new Map<string, string>();
      const on = (host: string) => [...hostOf].filter(([, h]) => h === host).map(([id]) => id);
      for (let i = 0; on('host-b').length < 4 || on('host-a').length < 2 || on('host-c').length < 2 || i < 12; i++) {
        if (i >= 40)
          throw new Error(`40 sessions opened and still not spread over the hosts: ${JSON.stringify([...hostOf])}`);
        const id = trial.sessionId(`k${i}`);
        await trial.sessions.open(id);
        const queue = await until(
          `${id} to open`,
          () => openedOnQueue(client, id),
          (q) => q !== null,
          30_000,
        );
        const host = HOSTS.find((h) => fleet.queue(h) === queue);
        if (!host) throw new Error(`${id} opened on ${queue}, no host's queue`);
        hostOf.set(id, host);
      }
      const all = [...hostOf.keys()];
      const [quietText, quietTool, ...busyB] = on('host-b') as [string, string, ...string[]];
      const busy = all.filter((id) => id !== quietText && id !== quietTool);
      const others = busy.filter((id) => hostOf.get(id) !== 'host-b');

      await Promise.all(
        busy.map((id) =>
          trial.send(id, {
            kind: 'followup',
            messageId: `${tagOf(id)}-t1`,
            content: `[${tagOf(id)}] t1: echo, then sleep.`,
          }),
        ),
      );
      // The moment: every busy session of host-b is in its sleep, on host-b's worker.
      const b1 = fleet.current('host-b');
      await until(
        "host-b's sleeps to run",
        () => Promise.all(busyB.map((id) => store.read(id).catch(() => [] as SessionEvent[]))),
        (logs) => logs.every((log, i) => running(log, `${tagOf(busyB[i] ?? '')}-sleep`)),
        60_000,
      ).catch(async (error: unknown) => {
        throw await diagnose(trial, all, error);
      });
      for (const id of busyB) {
        const tool = (await pendingActivities(client, id)).find((a) => a.type === 'toolStep');
        expect(tool, id).toMatchObject({ state: 'STARTED' });
        expect(pidOfIdentity(tool?.lastWorkerIdentity), id).toBe(b1.pid);
      }

      b1.kill('SIGKILL');
      await b1.exited;

      // While host-b is down: a steer reaches a session of host-b that waits in its tool step, one of its
      // sessions answers a followup whole, another's model step answers and its tool step waits.
      const steered = busyB[0] as string;
      await trial.send(steered, {
        kind: 'steer',
        messageId: `${tagOf(steered)}-steer`,
        content: `[${tagOf(steered)}] t1 steer: keep the answer short.`,
      });
      await trial.send(quietText, {
        kind: 'followup',
        messageId: `${tagOf(quietText)}-q1`,
        content: `[${tagOf(quietText)}] q1: answer in one line.`,
      });
      await trial.send(quietTool, {
        kind: 'followup',
        messageId: `${tagOf(quietTool)}-q2`,
        content: `[${tagOf(quietTool)}] q2: echo something.`,
      });
      const whileDown = async () => {
        const textLog = await until(
          `${quietText}'s turn while host-b is down`,
          () => store.read(quietText),
          (log) => turnEnds(log).length > 0,
          60_000,
        );
        expect(turnEnds(textLog)).toEqual(['1:completed']);
        await until(
          `${quietTool}'s tool step to wait for host-b`,
          () => pendingActivities(client, quietTool),
          (pending) => pending.some((a) => a.type === 'toolStep' && a.state === 'SCHEDULED'),
          60_000,
        );
        // The other hosts' sessions finish their turns without host-b (a model step host-b's worker was
        // running is retried elsewhere once its heartbeat times out).
        for (const id of others) {
          const log = await until(
            `${id}'s turn`,
            () => store.read(id),
            (l) => turnEnds(l).length > 0,
            60_000,
          );
          expect(turnEnds(log), id).toEqual(['1:completed']);
        }
        // Host-b's tool steps timed out on the dead worker and wait, rescheduled, for a worker of host-b.
        for (const id of busyB) {
          await until(
            `${id}'s tool step to be rescheduled`,
            () => pendingActivities(client, id),
            (pending) => pending.some((a) => a.type === 'toolStep' && a.state === 'SCHEDULED' && a.attempt >= 2),
            60_000,
          );
        }
      };
      await whileDown().catch(async (error: unknown) => {
        throw await diagnose(trial, all, error);
      });
      const deadPids = fleet.pids('host-b');
      for (const id of [quietText, quietTool]) {
        const modelPids = pidsOf(await activityRuns(client, id), 'modelStep');
        expect(modelPids.length, id).toBeGreaterThan(0);
        for (const pid of modelPids) expect(fleet.hostOfPid(pid), `${id}: model step on pid ${pid}`).not.toBe('host-b');
      }
      for (const id of busyB) {
        const log = await store.read(id);
        expect(toolResult(log, `${tagOf(id)}-sleep`), id).toBeUndefined();
        expect(pidsOf(await activityRuns(client, id), 'toolStep'), id).toEqual([]);
      }
      expect(deadPids).toEqual([b1.pid]);

      // A replacement for host-b: the waiting tool steps run there, and every turn ends.
      const b2 = await fleet.start('host-b');
      const logs = await untilAllSettled(trial, store, all, SETTLE_TIMEOUT_MS).catch(async (error: unknown) => {
        throw await diagnose(trial, all, error);
      });
      const runs = trial.toolRuns();
      for (const id of all) {
        const log = logs.get(id) ?? [];
        const host = hostOf.get(id) ?? '';
        expect(turnEnds(log), id).toEqual(['1:completed']);
        const history = await activityRuns(client, id);
        // Tool steps only ever on the session's host queue, run by that host's workers.
        for (const run of history.filter((r) => r.type === 'toolStep')) {
          expect(run.taskQueue, id).toBe(fleet.queue(host));
          expect(fleet.hostOfPid(pidOfIdentity(run.identity)), `${id}: tool step by ${run.identity}`).toBe(host);
        }
        if (id === quietTool || busyB.includes(id)) {
          expect(pidsOf(history, 'toolStep').at(-1), id).toBe(b2.pid);
        }
      }
      for (const id of busyB) {
        const log = logs.get(id) ?? [];
        const callId = `${tagOf(id)}-sleep`;
        // The sleep running when its worker died: outcome unknown, never run again.
        expect(toolResult(log, callId), id).toMatchObject({ status: 'interrupted', output: TOOL_OUTCOME_UNKNOWN });
        expect(
          runs.filter((r) => r === callId),
          id,
        ).toEqual([callId]);
        expect(toolResult(log, `${tagOf(id)}-echo`), id).toMatchObject({ status: 'ok' });
      }
      const steerLog = logs.get(steered) ?? [];
      expect(ofType(steerLog, 'user/message').map((m) => m.messageId)).toContain(`${tagOf(steered)}-steer`);
      expect(toolResult(logs.get(quietTool) ?? [], `${tagOf(quietTool)}-q2-echo`)).toMatchObject({ status: 'ok' });

      expectClean(await checkSessions(trial, store, client, all, tagOf));
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'the Temporal server SIGKILLed and restarted mid-run: every turn completes, nothing lost or twice',
    async ({ onTestFinished }) => {
      // Even sessions stream a ~6 s answer; odd ones echo, then sleep (non-idempotent) or nap (idempotent) 5 s.
      const tool = (i: number) => (i % 4 === 1 ? 'sleep' : 'nap');
      const replies: Reply[] = [];
      for (let i = 0; i < 12; i++) {
        const r = `r${i}`;
        if (i % 2 === 1)
          replies.push({
            match: { lastUserContains: `[${r}] t1` },
            toolCalls: [
              { id: `${r}-echo`, name: 'echo', arguments: { text: r } },
              { id: `${r}-${tool(i)}`, name: tool(i), arguments: { ms: 5_000 } },
            ],
          });
        replies.push(
          {
            match: { lastUserContains: `[${r}] t1` },
            text: `${r} answers slowly. `.repeat(12),
            chunkSize: 4,
            chunkDelayMs: 100,
            repeat: 3,
          },
          { match: { lastUserContains: `[${r}] t2` }, text: `${r}: after the restart.`, repeat: 3 },
        );
      }
      const trial = await trialOf('server-restart', { models: [TEST_MODEL], mode: 'match', replies }, onTestFinished);
      await Promise.all(HOSTS.map((h) => trial.fleet.start(h)));
      const all = Array.from({ length: 12 }, (_, i) => trial.sessionId(`r${i}`));
      await Promise.all(
        all.map((id) =>
          trial.send(id, { kind: 'followup', messageId: `${tagOf(id)}-t1`, content: `[${tagOf(id)}] t1: go.` }, true),
        ),
      );

      // The moment: every session is in its first turn, several streaming and several in their tools.
      // Only the even sessions stream their first answer (an odd one's first request asks for its tools).
      const streaming = (log: readonly SessionEvent[], id: string) =>
        Number(tagOf(id).slice(1)) % 2 === 0 &&
        ofType(log, 'request/sent').length > 0 &&
        ofType(log, 'assistant/message').length === 0;
      const inTools = (log: readonly SessionEvent[], id: string) => {
        const i = Number(tagOf(id).slice(1));
        return running(log, `${tagOf(id)}-${tool(i)}`);
      };
      const atMoment = await until(
        'sessions streaming and in tools at once',
        () => Promise.all(all.map((id) => store.read(id).catch(() => [] as SessionEvent[]))),
        (logs) =>
          logs.every((log) => ofType(log, 'turn/start').length > 0) &&
          logs.filter((log, i) => streaming(log, all[i] ?? '')).length >= 3 &&
          logs.filter((log, i) => inTools(log, all[i] ?? '')).length >= 3,
        60_000,
      ).catch(async (error: unknown) => {
        throw await diagnose(trial, all, error);
      });
      const cutStreams = all.filter((id, i) => streaming(atMoment[i] ?? [], id));
      const cutTools = all.filter((id, i) => inTools(atMoment[i] ?? [], id));
      console.log(`server restart: ${cutStreams.length} sessions streaming, ${cutTools.length} in tools`);

      await testCluster.cluster.restart();
      // Messages right after the restart: each is sent until the server acknowledges it.
      await Promise.all(
        all.map((id) =>
          trial.send(id, {
            kind: 'followup',
            messageId: `${tagOf(id)}-t2`,
            content: `[${tagOf(id)}] t2: still there?`,
          }),
        ),
      );
      const logs = await untilAllSettled(trial, store, all, SETTLE_TIMEOUT_MS).catch(async (error: unknown) => {
        throw await diagnose(trial, all, error);
      });
      const runs = trial.toolRuns();
      for (const id of all) {
        const log = logs.get(id) ?? [];
        expect(turnEnds(log), id).toEqual(['1:completed', '2:completed']);
        expect(
          ofType(log, 'user/message').map((m) => m.messageId),
          id,
        ).toEqual([`${tagOf(id)}-t1`, `${tagOf(id)}-t2`]);
      }
      for (const id of cutTools) {
        const i = Number(tagOf(id).slice(1));
        const callId = `${tagOf(id)}-${tool(i)}`;
        const result = toolResult(logs.get(id) ?? [], callId);
        // A sleep runs once (its outcome unknown if its completion was lost with the server); a nap may run again.
        if (tool(i) === 'sleep') {
          expect(
            runs.filter((r) => r === callId),
            id,
          ).toEqual([callId]);
          expect(['ok', 'interrupted'], `${id}: ${result?.status}`).toContain(result?.status);
        } else {
          expect(result, id).toMatchObject({ status: 'ok' });
        }
      }
      for (const id of cutStreams) {
        const answer = ofType(logs.get(id) ?? [], 'assistant/message').find((m) => m.turn === 1);
        expect(answer?.content, id).toBe(`${tagOf(id)} answers slowly. `.repeat(12));
      }

      expectClean(await checkSessions(trial, store, client, all, tagOf));
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'a rolling restart of the three workers under load (SIGTERM drain, then a new worker per host): nothing lost',
    async ({ onTestFinished }) => {
      const turns = ['t1', 't2', 't3'];
      const answer = (w: string, t: string) => `${w} ${t} answer. `.repeat(6);
      const replies: Reply[] = [];
      for (let i = 0; i < 15; i++) {
        for (const t of turns) {
          const w = `w${i}`;
          replies.push(
            {
              match: { lastUserContains: `[${w}] ${t}` },
              toolCalls: [
                { id: `${w}-${t}-nap`, name: 'nap', arguments: { ms: 1_200 } },
                { id: `${w}-${t}-sleep`, name: 'sleep', arguments: { ms: 500 } },
              ],
            },
            // ~2 s of stream: long enough for a drain to find answers in flight.
            {
              match: { lastUserContains: `[${w}] ${t}` },
              text: answer(w, t),
              chunkSize: 6,
              chunkDelayMs: 80,
              repeat: 4,
            },
          );
        }
      }
      const trial = await trialOf('rolling', { models: [TEST_MODEL], mode: 'match', replies }, onTestFinished);
      const { fleet } = trial;
      await Promise.all(HOSTS.map((h) => fleet.start(h)));
      const all = Array.from({ length: 15 }, (_, i) => trial.sessionId(`w${i}`));

      // Each session: its first followup at once, the second and a steer while the first turns run, a
      // third later — all while the workers restart one by one.
      const senders = all.map(async (id, i) => {
        const w = tagOf(id);
        await trial.send(id, { kind: 'followup', messageId: `${w}-t1`, content: `[${w}] t1: nap and sleep.` }, true);
        await sleep(2_000 + i * 200);
        await trial.send(id, { kind: 'followup', messageId: `${w}-t2`, content: `[${w}] t2: once more.` });
        await sleep(3_000);
        await trial.send(id, { kind: 'steer', messageId: `${w}-steer`, content: `[${w}] t2 steer: be brief.` });
        await sleep(4_000);
        await trial.send(id, { kind: 'followup', messageId: `${w}-t3`, content: `[${w}] t3: a last time.` });
      });
      const sent = Promise.all(senders);
      sent.catch(() => undefined);

      await until(
        'every session to start its first turn',
        () => Promise.all(all.map((id) => store.read(id).catch(() => [] as SessionEvent[]))),
        (logs) => logs.every((log) => ofType(log, 'turn/start').length > 0),
        60_000,
      ).catch(async (error: unknown) => {
        throw await diagnose(trial, all, error);
      });
      const restarts: string[] = [];
      const startedAt = Date.now();
      for (const host of HOSTS) {
        const old = fleet.current(host);
        // A drained worker exits by itself (code 0); a SIGKILL after the grace period would fail here.
        const exit = await old.stop(30_000);
        expect(exit, `${host}'s worker (pid ${old.pid}) on SIGTERM:\n${old.output()}`).toEqual({
          code: 0,
          signal: null,
        });
        const next = await fleet.start(host);
        restarts.push(`${host}: ${old.pid} -> ${next.pid}`);
        await sleep(1_500);
      }
      const rolledMs = Date.now() - startedAt;
      await sent;

      const logs = await untilAllSettled(trial, store, all, SETTLE_TIMEOUT_MS).catch(async (error: unknown) => {
        throw await diagnose(trial, all, error);
      });
      const cut: string[] = [];
      for (const id of all) {
        const log = logs.get(id) ?? [];
        const ends = ofType(log, 'turn/end');
        expect(ends.length, id).toBeGreaterThanOrEqual(3);
        expect(
          ends.filter((e) => e.reason !== 'completed').map((e) => `${e.turn}:${e.reason}`),
          id,
        ).toEqual([]);
        // Each accepted message entered the transcript exactly once.
        expect(
          ofType(log, 'user/message')
            .map((m) => m.messageId)
            .sort(),
          id,
        ).toEqual(
          trial
            .acked(id)
            .map((m) => m.messageId)
            .sort(),
        );
        // Every answer is whole: a drained worker's stream is asked for again, never logged cut short.
        for (const message of ofType(log, 'assistant/message').filter((m) => m.interrupted)) {
          const after = log.filter((e) => e.seq > message.seq && 'turn' in e && e.turn === message.turn);
          cut.push(
            `${id}: step ${message.turn}.${message.step} logged cut short (${JSON.stringify(message.content)}, ` +
              `${message.toolCalls.length} tool calls), then: ${after.map((e) => e.type).join(', ')}`,
          );
        }
        const host = fleet.hostOfPid(pidsOf(await activityRuns(client, id), 'toolStep')[0] ?? NaN);
        for (const run of (await activityRuns(client, id)).filter((r) => r.type === 'toolStep' && r.identity)) {
          expect(fleet.hostOfPid(pidOfIdentity(run.identity)), `${id}: tool step by ${run.identity}`).toBe(host);
        }
      }
      const bodies = trial.provider
        .requests()
        .filter((r) => r.path.endsWith('/chat/completions'))
        .map((r) => r.body);
      console.log(
        `rolling restart: ${restarts.join(', ')}; ${bodies.length - new Set(bodies).size} requests asked again, ` +
          `${cut.length} answers cut short; rolled in ${rolledMs} ms, settled in ${Date.now() - startedAt} ms`,
      );
      expect(cut).toEqual([]);

      expectClean(await checkSessions(trial, store, client, all, tagOf));
    },
    SCENARIO_TIMEOUT_MS,
  );
});
