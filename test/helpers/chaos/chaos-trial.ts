// One chaos trial: a fresh Temporal dev server (persistent db file, continue-as-new suggested at every
// turn boundary), a scripted provider, one or two worker processes, and a scripted multi-turn, tool-using
// session fed from several processes — while something is killed at the planned moment. Then it waits
// until the session is idle with nothing left to run and checks the log (check-trial.ts).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Failpoint } from '../../../src/activities/failpoints.js';
import { SessionClient } from '../../../src/client/session-client.js';
import { COMPACTION_INSTRUCTION, type SessionEvent } from '../../../src/core/index.js';
import { startDevServer, type DevServer } from '../../../src/local-stack/dev-server.js';
import { signalGroup } from '../../../src/local-stack/signal-group.js';
import type { Script } from '../../../src/scripted-provider/script.js';
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
import { SCENARIO_MODEL, scriptedProfile } from '../scenario-runtime.js';
import {
  runSenderProcess,
  sendThroughCli,
  sendThroughClient,
  sleep,
  untilSent,
  type AckedMessage,
  type ChaosMessage,
} from './chaos-messages.js';
import type { KillKind, TrialPlan } from './chaos-plan.js';
import { checkTrial, ZERO_COUNTS, type TrialCounts } from './check-trial.js';

/** What every trial shares: binaries, the workflow bundle, PostgreSQL. */
export interface ChaosEnv {
  readonly cliPath: string;
  readonly workflowBundlePath: string;
  readonly postgresUrl: string;
  /** Unique per run: session ids in the shared PostgreSQL database must not collide across runs. */
  readonly runId: string;
  readonly log?: (line: string) => void;
}

export interface TrialResult {
  readonly plan: TrialPlan;
  readonly counts: TrialCounts;
  /** Kills that happened, by kind (a failpoint chain can kill twice). */
  readonly kills: Readonly<Record<KillKind, number>>;
  /** Failpoints that fired (from the workers' failpoint log), in order. */
  readonly hits: readonly Failpoint[];
  /** The trial could not finish (the session never settled, a worker misbehaved): a failure too. */
  readonly error: string | null;
  readonly problems: readonly string[];
  readonly turnErrors: number;
  readonly audited: boolean;
  readonly turns: number;
  /** Workflow runs of the session: 1 + its continue-as-new hand-overs. */
  readonly runs: number;
  readonly events: number;
  readonly messages: number;
  readonly durationMs: number;
}

/**
 * Server-side: continue-as-new is suggested once a run's history holds this many events — after a
 * step or two, so practically every turn boundary hands over to a new run, and a kill near a turn end
 * is a kill around a continue-as-new. (An idle new run holds 4: it never loops.)
 */
export const SUGGEST_CONTINUE_AS_NEW_AT = 12;
const SETTLE_TIMEOUT_MS = 180_000;
const PHASE_TIMEOUT_MS = 120_000;
const SESSION_LIMITS = { keepRecentTurns: 1, compactAt: 0 } as const;

/** The trial's conversation: five followups, a steer, two injects, a duplicate, a manual compaction. */
const text = (tag: string, body: string) => `[${tag}] ${body}`;
const FOLLOWUPS = 5;
const followup = (k: number): ChaosMessage => ({
  kind: 'followup',
  messageId: `f${k}`,
  content: text(`f${k}`, `Task ${k}: echo "w${k}", then ${k % 2 === 1 ? 'wait' : 'nap'} a moment and report.`),
});

function chaosScript(): Script {
  const streamed = { chunkSize: 6, chunkDelayMs: 15 } as const;
  return {
    models: [SCENARIO_MODEL],
    mode: 'match',
    cache: 'deepseek',
    replies: [
      {
        match: { lastUserContains: COMPACTION_INSTRUCTION.slice(0, 40) },
        text: 'Summary: the user gave echo-and-wait tasks; each echo worked and each wait finished.',
        ...streamed,
        repeat: 1_000,
      },
      // Each task: one step calling two tools (an echo and a non-idempotent sleep or an idempotent
      // nap), then one answering. A retried request may take the next reply; the fallback catches the rest.
      ...Array.from({ length: FOLLOWUPS }, (_, i) => {
        const k = i + 1;
        const wait = k % 2 === 1 ? 'sleep' : 'nap';
        return [
          {
            match: { lastUserContains: `[f${k}]` },
            text: `Working on task ${k}.`,
            toolCalls: [
              { id: `f${k}-echo`, name: 'echo', arguments: JSON.stringify({ text: `w${k}` }) },
              { id: `f${k}-${wait}`, name: wait, arguments: '{"ms":300}' },
            ],
            ...streamed,
          },
          { match: { lastUserContains: `[f${k}]` }, text: `Task ${k} is done: echoed w${k} and waited.`, ...streamed },
        ];
      }).flat(),
      { text: 'Noted; carrying on with what was asked.', ...streamed, repeat: 10_000 },
    ],
  };
}

export async function runTrial(env: ChaosEnv, plan: TrialPlan): Promise<TrialResult> {
  const started = Date.now();
  const sessionId = `chaos-${env.runId}-${plan.index}`;
  const taskQueue = `chaos-${env.runId}-${plan.index}`;
  const log = (line: string) => env.log?.(`[trial ${plan.index} ${describePlan(plan)}] ${line}`);
  const dir = mkdtempSync(join(tmpdir(), 'dh-chaos-'));
  const failpointLog = join(dir, 'failpoints.log');
  const runLog = join(dir, 'tool-runs.log');
  const kills: Record<KillKind, number> = {
    failpoint: 0,
    'continue-as-new': 0,
    timer: 0,
    'dev-server': 0,
    'pg-worker': 0,
  };
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
    let server = await startChaosServer(env.cliPath, dbFile, join(dir, 'temporal.log'));
    const address = server.address;
    const port = Number(address.split(':').at(-1));
    cleanups.push(() => server.stop());
    const provider = await startScriptedProvider({ script: chaosScript() });
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

    const connection = await Connection.connect({ address });
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
      await sendThroughClient(sessions, sessionId, followup(1), { via: 'parent', start: true, limits: SESSION_LIMITS }),
    );
    const t0 = Date.now();
    log('f1 accepted');

    // The kill, at its moment (failpoint and continue-as-new kills are the workers' own).
    const at = (ms: number) => sleep(Math.max(0, t0 + ms - Date.now()));
    if (plan.kind === 'timer') {
      void inBackground('timer kill', async () => {
        await at(plan.killAtMs);
        if (stopping || !current) return;
        log(`timer: SIGKILL worker ${current.pid}`);
        current.kill('SIGKILL');
        kills.timer++;
      });
    } else if (plan.kind === 'pg-worker') {
      void inBackground('pg-worker kill', async () => {
        await at(plan.killAtMs);
        const victim = workers[plan.victim];
        if (stopping || !victim) return;
        log(`SIGKILL worker #${plan.victim + 1} of 2 (pid ${victim.pid})`);
        victim.kill('SIGKILL');
        kills['pg-worker']++;
      });
    } else if (plan.kind === 'dev-server') {
      void inBackground('dev-server kill', async () => {
        await at(plan.killAtMs);
        if (stopping) return;
        log(`SIGKILL the dev server (pid ${server.pid}), down for ${plan.downMs} ms`);
        signalGroup(server.pid, 'SIGKILL');
        await server.stop();
        kills['dev-server']++;
        await sleep(plan.downMs);
        server = await startChaosServer(env.cliPath, dbFile, join(dir, 'temporal.log'), port);
        log('the dev server is back');
      });
    }

    const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0] = plan.gapsMs;
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
            { kind: 'steer', messageId: 's1', content: text('s1', 'Keep the reports short.'), delayMs: g0 },
            { kind: 'inject', messageId: 'i1', content: text('i1', 'FYI: the branch is main.'), delayMs: g1 },
            { ...followup(2), delayMs: g2 },
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
        acked.push(await sendThroughCli(target, followup(3)));
        acked.push(
          await sendThroughCli(target, { kind: 'inject', messageId: 'i2', content: text('i2', 'FYI: CI is green.') }),
        );
      }),
    );
    // This process: a followup sent twice under one id (a client retry): it must run once.
    sends.push(
      inBackground('duplicate followup', async () => {
        await sleep(g4);
        acked.push(await sendThroughClient(sessions, sessionId, followup(4), { via: 'parent' }));
        acked.push(await sendThroughClient(sessions, sessionId, followup(4), { via: 'parent (duplicate)' }));
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
    acked.push(await sendThroughClient(sessions, sessionId, followup(5), { via: 'parent' }));

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
      const name = hit.split(' ')[0] as Failpoint;
      kills[name === 'continue-as-new' ? 'continue-as-new' : 'failpoint']++;
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
    };
    for (const problem of check.problems) log(`PROBLEM ${problem}`);
    log(
      `done in ${Math.round(result.durationMs / 1000)} s: ${result.turns} turns, ${result.runs} runs, ${result.events} events, ` +
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
    return {
      plan,
      counts: { ...ZERO_COUNTS },
      kills,
      hits: readLines(failpointLog).map((line) => line.split(' ')[0] as Failpoint),
      error: diagnosis,
      problems: [],
      turnErrors: 0,
      audited: false,
      turns: events.filter((e) => e.type === 'turn/end').length,
      runs: 0,
      events: events.length,
      messages: new Set(acked.map((m) => m.messageId)).size,
      durationMs: Date.now() - started,
    };
  } finally {
    stopping = true;
    await cleanup();
    await Promise.allSettled(background);
  }
}

export function describePlan(plan: TrialPlan): string {
  switch (plan.kind) {
    case 'failpoint':
      return `failpoint ${plan.failpoints.join(' → ')}`;
    case 'continue-as-new':
      return `continue-as-new +${plan.canDelayMs} ms`;
    case 'timer':
      return `timer @${plan.killAtMs} ms`;
    case 'dev-server':
      return `dev-server @${plan.killAtMs} ms, down ${plan.downMs} ms`;
    case 'pg-worker':
      return `pg-worker #${plan.victim + 1} @${plan.killAtMs} ms`;
  }
}

/** A dev server keeping its state in `dbFile`, suggesting continue-as-new early (see above). */
async function startChaosServer(cliPath: string, dbFile: string, logFile: string, port?: number): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevServer({
        cliPath,
        dbFile,
        logFile,
        ...(port !== undefined ? { port } : {}),
        dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': SUGGEST_CONTINUE_AS_NEW_AT },
      });
    } catch (error) {
      // A restart on the same port: the killed server's sockets may take a moment to go.
      if (port === undefined || attempt >= 10) throw error;
      await sleep(500);
    }
  }
}

function readLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}
