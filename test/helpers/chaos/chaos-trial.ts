// One chaos trial: a fresh Temporal dev server (persistent db file, continue-as-new suggested at every
// turn boundary), a scripted provider, one or two worker processes, and a scripted multi-turn, tool-using
// session (in the subagent plan, delegating to two children) fed from several processes — while something
// is killed at the planned moment. Then it waits until the session is idle and checks every log (check-trial.ts).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Failpoint } from '../../../src/activities/failpoints.js';
import { SessionClient } from '../../../src/client/session-client.js';
import type { SessionEvent } from '../../../src/core/index.js';
import { signalGroup } from '../../../src/local-stack/signal-group.js';
import { startScriptedProvider } from '../../../src/scripted-provider/start-scripted-provider.js';
import {
  compactUpdate,
  sessionWorkflowId,
  stateQuery,
  type SessionStateView,
} from '../../../src/shared/session-messages.js';
import { PostgresSessionStore } from '../../../src/stores/postgres-session-store.js';
import type { SessionStore } from '../../../src/stores/session-store.js';
import { SqliteSessionStore } from '../../../src/stores/sqlite-session-store.js';
import { startChildWorker, type ChildWorker, type WorkerProcessConfig } from '../child-worker.js';
import { scriptedProfile } from '../scenario-runtime.js';
import {
  runSenderProcess,
  sendThroughCli,
  sendThroughClient,
  sleep,
  untilSent,
  type AckedMessage,
} from './chaos-messages.js';
import type { KillKind, TrialPlan } from './chaos-plan.js';
import { chaosScript, followup, tagged } from './chaos-script.js';
import { startChaosServer } from './chaos-server.js';
import { childrenRan, childWindows, killMoment, killsAmongChildren } from './child-moments.js';
import { checkTrial } from './check-trial.js';
import { describePlan, noKills, unfinishedResult, type TrialResult } from './trial-result.js';

/** What every trial shares: binaries, the workflow bundle, PostgreSQL. */
export interface ChaosEnv {
  readonly cliPath: string;
  readonly workflowBundlePath: string;
  readonly postgresUrl: string;
  /** Unique per run: session ids in the shared PostgreSQL database must not collide across runs. */
  readonly runId: string;
  readonly log?: (line: string) => void;
}

const SETTLE_TIMEOUT_MS = 180_000;
const PHASE_TIMEOUT_MS = 120_000;
const SESSION_LIMITS = { keepRecentTurns: 1, compactAt: 0 } as const;

export async function runTrial(env: ChaosEnv, plan: TrialPlan): Promise<TrialResult> {
  const started = Date.now();
  const sessionId = `chaos-${env.runId}-${plan.index}`;
  const taskQueue = `chaos-${env.runId}-${plan.index}`;
  const log = (line: string) => env.log?.(`[trial ${plan.index} ${describePlan(plan)}] ${line}`);
  const dir = mkdtempSync(join(tmpdir(), 'dh-chaos-'));
  const failpointLog = join(dir, 'failpoints.log');
  const runLog = join(dir, 'tool-runs.log');
  const kills = noKills();
  /** When the harness killed something (the workers' own kills are timed in the failpoint log). */
  const killTimes: number[] = [];
  const cleanups: Array<() => Promise<unknown>> = [];
  const cleanup = async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => undefined);
  };
  cleanups.push(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));

  const acked: AckedMessage[] = [];
  const workers: ChildWorker[] = [];
  let stopping = false;
  let events: SessionEvent[] = [];
  let lastState: SessionStateView | null = null;
  const background: Array<Promise<unknown>> = [];
  const backgroundErrors: string[] = [];
  const inBackground = (what: string, run: () => Promise<unknown>): Promise<unknown> => {
    const task = run().catch((error: unknown) => {
      if (!stopping) backgroundErrors.push(`${what}: ${(error as Error).message}`);
    });
    background.push(task);
    return task;
  };
  const sends: Array<Promise<unknown>> = [];

  try {
    // ---- the stack of this trial ----
    const dbFile = join(dir, 'temporal.db');
    const serverLog = join(dir, 'temporal.log');
    const retrying = (why: string) => log(`the dev server did not start; again: ${why}`);
    let server = await startChaosServer(env.cliPath, dbFile, serverLog, undefined, retrying);
    const address = server.address;
    const port = Number(address.split(':').at(-1));
    cleanups.push(() => server.stop());
    const provider = await startScriptedProvider({ script: chaosScript(plan.subagents) });
    cleanups.push(() => provider.close());
    const profile = scriptedProfile(provider.url);
    const usePostgres = plan.kind === 'pg-worker';
    const store: SessionStore = usePostgres
      ? await PostgresSessionStore.open(env.postgresUrl, { poolSize: 4 })
      : SqliteSessionStore.open(join(dir, 'sessions.db'));
    cleanups.push(() => store.close());
    const config: WorkerProcessConfig = {
      address,
      namespace: server.namespace,
      taskQueue,
      workflowBundlePath: env.workflowBundlePath,
      storePath: join(dir, 'sessions.db'),
      providerBaseURL: provider.url,
      runLog,
      idleTimeoutMs: 5_000,
      hostId: 'chaos-host',
      continueAsNewKillDelayMs: plan.canDelayMs,
      ...(plan.subagents ? { subagentDepth: 1 } : {}),
      ...(usePostgres ? { storeUrl: env.postgresUrl } : {}),
    };
    cleanups.push(async () => {
      stopping = true;
      await Promise.all(workers.map((w) => w.stop(3_000)));
    });
    const startWorker = async (failpoint?: Failpoint): Promise<ChildWorker> => {
      const worker = await startChildWorker(config, failpoint ? { failpoints: [failpoint], failpointLog } : {});
      workers.push(worker);
      return worker;
    };

    // One worker, replaced whenever it dies; each replacement is armed with the next failpoint of the chain.
    const chain: Failpoint[] =
      plan.kind === 'failpoint' ? [...plan.failpoints] : plan.kind === 'continue-as-new' ? ['continue-as-new'] : [];
    let current: ChildWorker | null = null;
    if (plan.kind === 'pg-worker') {
      await Promise.all([startWorker(), startWorker()]);
    } else {
      current = await startWorker(chain[0]);
      let armed = 0;
      void inBackground('worker supervisor', async () => {
        for (;;) {
          const exit = await (current as ChildWorker).exited;
          if (stopping) return;
          if (exit.signal !== 'SIGKILL') {
            throw new Error(`worker ${(current as ChildWorker).pid} exited by itself: ${JSON.stringify(exit)}`);
          }
          armed++;
          log(
            `worker died (${exit.signal}); starting ${chain[armed] ? `one armed at ${chain[armed]}` : 'a clean one'}`,
          );
          current = await startWorker(chain[armed]);
        }
      });
    }

    // Retried like a send: with many trials at once, a first connect may time out.
    let connected: Connection | undefined;
    await untilSent(async () => (connected = await Connection.connect({ address })), 60_000);
    if (!connected) throw new Error('no connection to the dev server');
    const connection = connected;
    cleanups.push(() => connection.close());
    const client = new Client({ connection, namespace: server.namespace });
    const sessions = new SessionClient(client, { taskQueue, timeoutMs: 10_000 });
    const handle = sessions.handle(sessionId);
    cleanups.push(() => handle.terminate('chaos trial done'));
    const readLog = async () => (events = await store.read(sessionId).catch(() => events));
    const waitForLog = async (what: string, predicate: (e: readonly SessionEvent[]) => boolean) => {
      const deadline = Date.now() + PHASE_TIMEOUT_MS;
      while (!predicate(await readLog())) {
        if (Date.now() > deadline) throw new Error(`${what} never happened`);
        await sleep(50);
      }
    };

    // ---- the conversation ----
    acked.push(
      await sendThroughClient(sessions, sessionId, followup(1, plan.subagents), {
        via: 'parent',
        start: true,
        limits: SESSION_LIMITS,
      }),
    );
    const t0 = Date.now();
    log('f1 accepted');

    // The kill, at its moment (failpoint and continue-as-new kills are the workers' own): `killAtMs` after
    // f1, or in a subagent trial timed from the children, `childKillMs` after the first child's first step.
    const at = () => killMoment(plan, t0, store, sessionId, () => stopping);
    const killed = (kind: KillKind) => {
      kills[kind]++;
      killTimes.push(Date.now());
    };
    if (plan.kind === 'timer') {
      void inBackground('timer kill', async () => {
        await at();
        if (stopping || !current) return;
        log(`timer: SIGKILL worker ${current.pid}`);
        current.kill('SIGKILL');
        killed('timer');
      });
    } else if (plan.kind === 'pg-worker') {
      void inBackground('pg-worker kill', async () => {
        await at();
        const victim = workers[plan.victim];
        if (stopping || !victim) return;
        log(`SIGKILL worker #${plan.victim + 1} of 2 (pid ${victim.pid})`);
        victim.kill('SIGKILL');
        killed('pg-worker');
      });
    } else if (plan.kind === 'dev-server') {
      void inBackground('dev-server kill', async () => {
        await at();
        if (stopping) return;
        log(`SIGKILL the dev server (pid ${server.pid}), down for ${plan.downMs} ms`);
        signalGroup(server.pid, 'SIGKILL');
        killed('dev-server');
        await server.stop();
        await sleep(plan.downMs);
        server = await startChaosServer(env.cliPath, dbFile, serverLog, port, retrying);
        log('the dev server is back');
      });
    }

    const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0] = plan.gapsMs;
    // A steer or inject that reached f1's first step would be its last user message, and that step would
    // not delegate: in subagent trials the other messages wait until that step's request is logged.
    if (plan.subagents) await waitForLog("f1's first request", (e) => e.some((x) => x.type === 'request/sent'));
    // Another process: a steer and an inject while turn 1 runs (or starting turn 2), then a followup.
    sends.push(
      inBackground('sender process', async () => {
        const sent = await runSenderProcess({
          address,
          namespace: server.namespace,
          taskQueue,
          sessionId,
          source: 'chaos-sender',
          messages: [
            { kind: 'steer', messageId: 's1', content: tagged('s1', 'Keep the reports short.'), delayMs: g0 },
            { kind: 'inject', messageId: 'i1', content: tagged('i1', 'FYI: the branch is main.'), delayMs: g1 },
            { ...followup(2, false), delayMs: g2 },
          ],
        }).catch((error: Error & { acked?: AckedMessage[] }) => {
          acked.push(...(error.acked ?? []));
          throw error;
        });
        acked.push(...sent);
      }),
    );
    // The temporal CLI binary: a followup and an inject, as a shell script would send them.
    sends.push(
      inBackground('temporal CLI', async () => {
        const target = {
          cliPath: env.cliPath,
          address,
          namespace: server.namespace,
          workflowId: sessionWorkflowId(sessionId),
        };
        await sleep(g3);
        acked.push(await sendThroughCli(target, followup(3, false)));
        acked.push(
          await sendThroughCli(target, { kind: 'inject', messageId: 'i2', content: tagged('i2', 'FYI: CI is green.') }),
        );
      }),
    );
    // This process: a followup sent twice under one id (a client retry): it must run once.
    sends.push(
      inBackground('duplicate followup', async () => {
        await sleep(g4);
        acked.push(await sendThroughClient(sessions, sessionId, followup(4, false), { via: 'parent' }));
        acked.push(await sendThroughClient(sessions, sessionId, followup(4, false), { via: 'parent (duplicate)' }));
      }),
    );

    // Mid-step: while a tool of a later turn runs, a steer and an inject, logged while that step runs (the
    // workflow's concurrent appendInbox) whatever the kills do to it.
    sends.push(
      inBackground('mid-step sends', async () => {
        await waitForLog('a tool running after turn 1', (e) => e.some((x) => x.type === 'tool/start' && x.turn >= 2));
        acked.push(
          await sendThroughClient(
            sessions,
            sessionId,
            { kind: 'steer', messageId: 's2', content: tagged('s2', 'Mid-step: keep it brief.') },
            { via: 'parent (mid-step)' },
          ),
        );
        acked.push(
          await sendThroughClient(
            sessions,
            sessionId,
            { kind: 'inject', messageId: 'i3', content: tagged('i3', 'Mid-step: the build is green.') },
            { via: 'parent (mid-step)' },
          ),
        );
      }),
    );

    // After turn 2: a manual compaction (its summary is a model call, the compaction failpoint's place),
    // then the last followup, which runs over the compacted view.
    await waitForLog('the end of turn 2', (e) => e.some((x) => x.type === 'turn/end' && x.turn === 2));
    await untilSent(() =>
      client.withDeadline(Date.now() + 15_000, () => handle.executeUpdate(compactUpdate, { args: [{}] })),
    );
    log('compaction requested');
    await waitForLog('a compaction', (e) => e.some((x) => x.type === 'compact/end'));
    acked.push(await sendThroughClient(sessions, sessionId, followup(5, false), { via: 'parent' }));

    // ---- settle: every waking message claimed, the session idle with nothing to run ----
    await Promise.all(sends);
    const deadline = Date.now() + SETTLE_TIMEOUT_MS;
    for (;;) {
      if (backgroundErrors.length > 0) throw new Error(backgroundErrors.join('; '));
      await readLog();
      const claimed = new Set(events.flatMap((e) => (e.type === 'inbox/claim' ? e.messageIds : [])));
      const enqueued = new Set(events.flatMap((e) => (e.type === 'inbox/enqueue' ? [e.messageId] : [])));
      const logged = acked.every((m) => (m.kind === 'inject' ? enqueued.has(m.messageId) : claimed.has(m.messageId)));
      const turnStarts = events.filter((e) => e.type === 'turn/start').length;
      const turnEnds = events.filter((e) => e.type === 'turn/end').length;
      if (logged && turnStarts === turnEnds) {
        lastState = await client
          .withDeadline(Date.now() + 5_000, () => handle.query(stateQuery))
          .catch(() => lastState);
        const s = lastState;
        if (
          s &&
          s.status === 'idle' &&
          s.queues.nextTurn === 0 &&
          s.queues.notYetLogged === 0 &&
          !s.wakeLatched &&
          s.head === events.length
        )
          break;
      }
      if (Date.now() > deadline) throw new Error('the session never settled');
      await sleep(200);
    }
    await readLog();
    log(`settled after ${Math.round((Date.now() - t0) / 1000)} s; checking`);

    // ---- checks ----
    for (const hit of readLines(failpointLog)) {
      const [name, , at] = hit.split(' ');
      kills[name === 'continue-as-new' ? 'continue-as-new' : 'failpoint']++;
      killTimes.push(Number(at));
    }
    const check = await checkTrial({
      sessionId,
      events,
      acked,
      providerBodies: provider
        .requests()
        .filter((r) => r.path.endsWith('/chat/completions'))
        .map((r) => r.body),
      toolRuns: readLines(runLog),
      idempotentCall: (callId) => callId.endsWith('-nap'),
      profile,
      store,
      client,
    });
    const result: TrialResult = {
      plan,
      counts: check.counts,
      kills,
      hits: readLines(failpointLog).map((line) => line.split(' ')[0] as Failpoint),
      error: null,
      problems: check.problems,
      turnErrors: check.turnErrors,
      audited: check.audited,
      turns: events.filter((e) => e.type === 'turn/end').length,
      runs: check.runs,
      events: events.length,
      messages: new Set(acked.map((m) => m.messageId)).size,
      durationMs: Date.now() - started,
      delegations: events.filter((e) => e.type === 'tool/start' && e.child !== undefined).length,
      children: check.children.length,
      childKills: killsAmongChildren(killTimes, childWindows(check.children)),
    };
    for (const problem of check.problems) log(`PROBLEM ${problem}`);
    if (plan.subagents && result.delegations === 0) log(`no delegation: ${turnOneSketch(events)}`);
    log(
      `done in ${Math.round(result.durationMs / 1000)} s: ${result.turns} turns, ${result.runs} runs, ${result.events} events, ` +
        (plan.subagents
          ? `${result.children} children ${childrenRan(check.children, t0)}, ${result.childKills} kills among them, `
          : '') +
        `kills ${JSON.stringify(Object.fromEntries(Object.entries(kills).filter(([, n]) => n > 0)))}, ` +
        `${check.problems.length === 0 ? 'clean' : `${check.problems.length} problem(s)`}`,
    );
    return result;
  } catch (error) {
    const diagnosis = [
      (error as Error).message,
      ...backgroundErrors,
      `log: ${events.map((e) => e.type).join(', ') || '(empty)'}`,
      `state: ${JSON.stringify(lastState)}`,
      `acked: ${acked.map((m) => m.messageId).join(', ')}`,
      ...workers.map((w, i) => `worker #${i + 1} (pid ${w.pid}):\n${w.output()}`),
    ].join('\n');
    log(`ERROR ${diagnosis}`);
    return unfinishedResult(
      plan,
      {
        kills,
        hits: readLines(failpointLog).map((line) => line.split(' ')[0] as Failpoint),
        turns: events.filter((e) => e.type === 'turn/end').length,
        events: events.length,
        messages: new Set(acked.map((m) => m.messageId)).size,
        durationMs: Date.now() - started,
      },
      diagnosis,
    );
  } finally {
    stopping = true;
    await cleanup();
    await Promise.allSettled(background);
  }
}

/** Turn 1 as far as the model's answers go: why a subagent trial's first step did not delegate. */
function turnOneSketch(events: readonly SessionEvent[]): string {
  return events
    .filter((e) => 'turn' in e && e.turn === 1)
    .map((e) =>
      e.type === 'assistant/message'
        ? `answer ${e.step} ${JSON.stringify(e.content)} [${e.toolCalls.map((c) => c.name).join(',')}]`
        : e.type === 'step/end' && e.error
          ? `step/end ${e.error.code}`
          : e.type === 'user/message'
            ? `user ${e.messageId ?? '?'}`
            : e.type,
    )
    .join(', ');
}

function readLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}
