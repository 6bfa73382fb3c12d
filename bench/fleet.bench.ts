// The fleet rate limiter under load: worker processes sharing one PostgreSQL store (the limiter's clocks are
// its tables) against a scripted provider's per-key quota — with the limiter and without it, its own cost per
// step at a quota that never binds, and one tenant's step latency while another tenant saturates its quota.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import pg from 'pg';
import type { SessionEvent } from '../src/core/index.js';
import type { Script } from '../src/scripted-provider/script.js';
import { startScriptedProvider, type ScriptedProvider } from '../src/scripted-provider/start-scripted-provider.js';
import type { QuotaOptions } from '../src/scripted-provider/rate-quota.js';
import { followupSignal, sessionWorkflowId } from '../src/shared/session-messages.js';
import { PostgresSessionStore } from '../src/stores/postgres-session-store.js';
import { agentSession } from '../src/workflows/session-workflow.js';
import { startChildWorker, type ChildWorker, type WorkerProcessConfig } from '../test/helpers/child-worker.js';
import { SCENARIO_MODEL } from '../test/helpers/scenario-runtime.js';
import { startPostgres } from '../test/setup/postgres.js';
import { percentile, startBenchServer, turnReplies } from './harness.bench.js';
import { fmt, median, type BenchSection } from './measure.js';

/** Model steps per worker, as `dh worker` takes with a fleet quota: waiting steps sleep in the limiter. */
const MODEL_CONCURRENCY = 256;
/** The scripted quota's burst (its default): what it lets through at once before pacing applies. */
const BURST_SECONDS = 1;
/** A quota so high the limiter never makes a call wait: what is left is its own cost. */
const NEVER_BINDING_RPM = 1_000_000;
/**
 * The two-tenant run's account quota, and tenant A's share of it: A saturates its own share while the account
 * has room to spare (A asks for 4/s, B for under 12/s, the machine runs ~20 steps/s).
 */
const TENANT_ACCOUNT_RPM = 1200;
const TENANT_SHARE = 0.2;
/** Tenant B's replies take this long, so B asks for well under the account's rest. */
const TENANT_B_REPLY_MS = 200;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One model step as the log, the history and the provider saw it (all on this machine's wall clock). */
interface StepRecord {
  readonly session: string;
  readonly step: number;
  /** `request/sent`'s `at`: the workflow's time when it scheduled the step (before the activity's dispatch). */
  readonly sentAt: number;
  /** The model-step activity's start (its last attempt), from the history's ActivityTaskStarted. */
  readonly startedAt: number | undefined;
  /** The provider's receipt of the request it answered; undefined while unanswered. */
  readonly receivedAt: number | undefined;
}

interface LoadResult {
  readonly sessions: number;
  readonly steps: number;
  readonly wallMs: number;
  readonly capped: boolean;
  /** Sessions whose turn ended `completed` / ended otherwise / never ended within the cap. */
  readonly completed: number;
  readonly turnErrors: number;
  readonly unfinished: number;
  /** Chat requests of these sessions (admitted and refused). */
  readonly calls: number;
  readonly records: StepRecord[];
  /** Per session: the turn's `turn/end` `at` minus its first `request/sent` `at`, ms. */
  readonly turnMs: number[];
  /** Date.now() when the first session was started. */
  readonly beganAt: number;
}

interface Infra {
  readonly client: Client;
  readonly store: PostgresSessionStore;
  readonly pool: pg.Pool;
  readonly config: (
    queue: string,
    provider: ScriptedProvider,
    extra?: Partial<WorkerProcessConfig>,
  ) => WorkerProcessConfig;
}

/** Replies for sessions of `steps` model steps each: steps − 1 echo tool calls, then an answer. */
function repliesFor(ids: readonly string[], steps: number, delayMs = 0): Script['replies'] {
  return ids.flatMap((id) =>
    turnReplies(tagOf(id), steps - 1, 16).map((reply) => (delayMs > 0 ? { ...reply, delayMs } : reply)),
  );
}

const tagOf = (id: string) => `fleet ${id}:`;
const idsOf = (label: string, count: number) => Array.from({ length: count }, (_, i) => `${label}-s${i}`);

async function provider(replies: Script['replies'], quota?: QuotaOptions): Promise<ScriptedProvider> {
  return await startScriptedProvider({
    script: { models: [SCENARIO_MODEL], mode: 'match', cache: 'off', replies },
    ...(quota !== undefined ? { quota } : {}),
  });
}

/** Starts each session's one turn (a followup that names it); resolves with Date.now() before the first. */
async function startSessions(infra: Infra, queue: string, ids: readonly string[]): Promise<number> {
  const beganAt = Date.now();
  await Promise.all(
    ids.map((id) =>
      infra.client.workflow.signalWithStart(agentSession, {
        workflowId: sessionWorkflowId(id),
        taskQueue: queue,
        args: [{ sessionId: id }],
        signal: followupSignal,
        signalArgs: [{ content: `${tagOf(id)} go`, messageId: `m-${id}` }],
      }),
    ),
  );
  return beganAt;
}

/** Starts the sessions; resolves when every turn has ended, or at the cap (what finished counts then). */
async function runSessions(
  infra: Infra,
  queue: string,
  ids: readonly string[],
  capMs: number,
): Promise<{ beganAt: number; endedAt: number; capped: boolean }> {
  const beganAt = await startSessions(infra, queue, ids);
  // The store is in the worker processes: poll it; the end is the last `turn/end`'s own time (`at`).
  for (const deadline = beganAt + capMs; ; await sleep(100)) {
    const { rows } = await infra.pool.query<{ n: number; last: string | null }>(
      `SELECT count(*)::int AS n, max(at)::text AS last FROM events WHERE type = 'turn/end' AND session_id = ANY($1)`,
      [ids],
    );
    const ended = rows[0]?.n ?? 0;
    if (ended >= ids.length) return { beganAt, endedAt: Number(rows[0]?.last), capped: false };
    if (Date.now() > deadline) return { beganAt, endedAt: Date.now(), capped: true };
  }
}

/** The session and step of a chat request (the tagged user message; one assistant message per step before it). */
function stepOf(body: string): { session: string; step: number } | undefined {
  try {
    const parsed = JSON.parse(body) as { messages?: Array<{ role?: string; content?: unknown }> };
    const messages = parsed.messages ?? [];
    const content = messages.find((m) => m.role === 'user')?.content;
    const session = /^fleet (\S+):/.exec(typeof content === 'string' ? content : '')?.[1];
    if (session === undefined) return undefined;
    return { session, step: messages.filter((m) => m.role === 'assistant').length + 1 };
  } catch {
    return undefined;
  }
}

/** Model-step activity starts by `turn.step`, from one session's history. */
async function activityStarts(client: Client, sessionId: string): Promise<Map<string, number>> {
  const history = await client.workflow.getHandle(sessionWorkflowId(sessionId)).fetchHistory();
  const scheduled = new Map<string, string>();
  const starts = new Map<string, number>();
  for (const e of history.events ?? []) {
    const attributes = e.activityTaskScheduledEventAttributes;
    const payload = attributes?.input?.payloads?.[0];
    if (attributes?.activityType?.name === 'modelStep' && payload) {
      const input = defaultPayloadConverter.fromPayload<{ turn: number; step: number }>(payload);
      scheduled.set(String(e.eventId), `${input.turn}.${input.step}`);
    }
    const started = e.activityTaskStartedEventAttributes;
    const key = started ? scheduled.get(String(started.scheduledEventId)) : undefined;
    if (key !== undefined) {
      starts.set(key, Number(e.eventTime?.seconds ?? 0) * 1000 + Number(e.eventTime?.nanos ?? 0) / 1e6);
    }
  }
  return starts;
}

/** What the log, the histories and the provider say about these sessions' turn. */
async function collect(
  infra: Infra,
  chat: ScriptedProvider,
  ids: readonly string[],
  steps: number,
  run: { beganAt: number; endedAt: number; capped: boolean },
): Promise<LoadResult> {
  const wanted = new Set(ids);
  // The last request of a step is the one that was answered (a refused one is always followed by another).
  const lastRequest = new Map<string, number>();
  let calls = 0;
  for (const request of chat.requests()) {
    if (!request.path.endsWith('/chat/completions')) continue;
    const at = stepOf(request.body);
    if (at === undefined || !wanted.has(at.session)) continue;
    calls++;
    lastRequest.set(`${at.session}/${at.step}`, request.receivedAt);
  }
  const records: StepRecord[] = [];
  const turnMs: number[] = [];
  let completed = 0;
  let turnErrors = 0;
  for (let i = 0; i < ids.length; i += 10) {
    await Promise.all(
      ids.slice(i, i + 10).map(async (id) => {
        const [events, starts] = await Promise.all([
          infra.store.read(id).catch(() => [] as SessionEvent[]),
          activityStarts(infra.client, id),
        ]);
        const answered = new Set(events.filter((e) => e.type === 'assistant/message').map((e) => e.step));
        for (const e of events) {
          if (e.type !== 'request/sent') continue;
          records.push({
            session: id,
            step: e.step,
            sentAt: e.at,
            startedAt: starts.get(`${e.turn}.${e.step}`),
            receivedAt: answered.has(e.step) ? lastRequest.get(`${id}/${e.step}`) : undefined,
          });
        }
        const end = events.find((e) => e.type === 'turn/end');
        const first = events.find((e) => e.type === 'request/sent');
        if (end?.type === 'turn/end') {
          if (end.reason === 'completed') completed++;
          else turnErrors++;
          if (first) turnMs.push(end.at - first.at);
        }
      }),
    );
  }
  return {
    sessions: ids.length,
    steps,
    wallMs: run.endedAt - run.beganAt,
    capped: run.capped,
    completed,
    turnErrors,
    unfinished: ids.length - completed - turnErrors,
    calls,
    records,
    turnMs,
    beganAt: run.beganAt,
  };
}

async function terminate(client: Client, ids: readonly string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 50) {
    await Promise.all(
      ids.slice(i, i + 50).map((id) =>
        client.workflow
          .getHandle(sessionWorkflowId(id))
          .terminate('fleet bench done')
          .catch(() => undefined),
      ),
    );
  }
}

/** Answered steps' provider receipts, in order. */
const admittedTimes = (r: LoadResult) =>
  r.records.flatMap((s) => (s.receivedAt !== undefined ? [s.receivedAt] : [])).sort((a, b) => a - b);

/** Admitted calls per second over the busy span, less the burst the provider lets through at once. */
function achievedRate(r: LoadResult, burst: number): number {
  const times = admittedTimes(r);
  const spanS = ((times.at(-1) ?? 0) - (times[0] ?? 0)) / 1000;
  return spanS > 0 ? (times.length - burst) / spanS : Number.NaN;
}

/** At the moment half the admitted calls were in: the fewest and the most any session had. */
function halfwaySpread(r: LoadResult, ids: readonly string[]): { min: number; max: number } {
  const times = admittedTimes(r);
  const half = times[Math.floor(times.length / 2)] ?? 0;
  const per = new Map(ids.map((id) => [id, 0]));
  for (const s of r.records)
    if (s.receivedAt !== undefined && s.receivedAt <= half) per.set(s.session, (per.get(s.session) ?? 0) + 1);
  const counts = [...per.values()];
  return { min: Math.min(...counts), max: Math.max(...counts) };
}

/** Per answered step: activity start → provider receipt (the limiter's wait and the call's own preparation). */
const inActivity = (r: LoadResult) =>
  r.records.flatMap((s) =>
    s.receivedAt !== undefined && s.startedAt !== undefined ? [s.receivedAt - s.startedAt] : [],
  );
/** Per answered step: `request/sent` → provider receipt (adds the activity's dispatch by Temporal). */
const fromSent = (r: LoadResult) =>
  r.records.flatMap((s) => (s.receivedAt !== undefined ? [s.receivedAt - s.sentAt] : []));

/** The median, NaN (printed —) when nothing was measured. */
const mid = (values: readonly number[]) => (values.length > 0 ? median(values) : Number.NaN);
const ms = (value: number) => (Number.isFinite(value) ? `${fmt(value)} ms` : '—');
const s1 = (valueMs: number) => (Number.isFinite(valueMs) ? `${(valueMs / 1000).toFixed(1)} s` : '—');
const x = (ratio: number) => (Number.isFinite(ratio) ? `${fmt(ratio)}×` : '—');

export async function fleetBench(
  sessions = Number(process.env.DH_BENCH_FLEET_SESSIONS ?? 200),
  steps = Number(process.env.DH_BENCH_FLEET_STEPS ?? 5),
  rpm = Number(process.env.DH_BENCH_FLEET_RPM ?? 600),
  capS = Number(process.env.DH_BENCH_FLEET_CAP_S ?? 120),
  rounds = Number(process.env.DH_BENCH_FLEET_ROUNDS ?? 3),
  tenantsOn = process.env.DH_BENCH_FLEET_TENANTS !== '0',
): Promise<BenchSection[]> {
  const dir = mkdtempSync(join(tmpdir(), 'dh-bench-fleet-'));
  const [server, postgres] = await Promise.all([startBenchServer(), startPostgres()]);
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace });
  const store = await PostgresSessionStore.open(postgres.url, { poolSize: 4 });
  const pool = new pg.Pool({ connectionString: postgres.url, max: 2 });
  const infra: Infra = {
    client,
    store,
    pool,
    config: (queue, chat, extra = {}) => ({
      address: server.address,
      namespace: server.namespace,
      taskQueue: queue,
      workflowBundlePath: server.sessionBundlePath,
      storePath: join(dir, 'unused.db'),
      storeUrl: postgres.url,
      providerBaseURL: chat.url,
      runLog: join(dir, 'run.log'),
      idleTimeoutMs: 60_000,
      modelConcurrency: MODEL_CONCURRENCY,
      ...extra,
    }),
  };
  const live = new Set<ChildWorker>();
  const startWorkers = async (configs: WorkerProcessConfig[]): Promise<ChildWorker[]> => {
    const workers = await Promise.all(configs.map((c) => startChildWorker(c)));
    for (const w of workers) live.add(w);
    return workers;
  };
  const stopWorkers = async (workers: readonly ChildWorker[]) => {
    await Promise.all(workers.map((w) => w.stop(3_000)));
    for (const w of workers) live.delete(w);
  };
  const providers: ScriptedProvider[] = [];
  const open = async (replies: Script['replies'], quota?: QuotaOptions) => {
    const p = await provider(replies, quota);
    providers.push(p);
    return p;
  };
  /** One load on two fresh worker processes of its own queue and provider. */
  const load = async (
    label: string,
    n: number,
    quota: QuotaOptions | undefined,
    fleetQuota: WorkerProcessConfig['fleetQuota'],
    capMs: number,
  ): Promise<{ result: LoadResult; chat: ScriptedProvider; ids: string[] }> => {
    const ids = idsOf(label, n);
    const chat = await open(repliesFor(ids, steps), quota);
    const queue = `fleet-${label}`;
    const extra = fleetQuota !== undefined ? { fleetQuota } : {};
    const workers = await startWorkers([infra.config(queue, chat, extra), infra.config(queue, chat, extra)]);
    try {
      const run = await runSessions(infra, queue, ids, capMs);
      const result = await collect(infra, chat, ids, steps, run);
      console.log(
        `  ${label}: ${result.completed} completed, ${result.turnErrors} turn errors, ${result.unfinished} unfinished ` +
          `in ${s1(result.wallMs)}; ${chat.rateLimitedAt().length} 429s`,
      );
      return { result, chat, ids };
    } finally {
      await terminate(client, ids);
      await stopWorkers(workers);
    }
  };

  try {
    // 1. The quota used: every session's steps admitted by the shared clocks.
    const quota = { requestsPerMinute: rpm, burstSeconds: BURST_SECONDS };
    const limited = await load('quota', sessions, quota, { requestsPerMinute: rpm }, 600_000);
    // 2. The same load, the same quota, no limiter: each worker sends at once and meets the 429s.
    const free = await load('free', sessions, quota, undefined, capS * 1000);

    // 3. The limiter's own cost: a quota that never binds against none, an unlimited provider, rounds alternating.
    const ovSessions = Math.max(1, Math.round(sessions / 10));
    const ovSteps = steps * 2;
    const labels = ['warm', ...Array.from({ length: rounds }, (_, r) => `r${r}`)];
    const ovIds = (kind: 'lim' | 'none', round: string) => idsOf(`ov-${kind}-${round}`, ovSessions);
    const ovChat = await open(
      labels.flatMap((round) => [
        ...repliesFor(ovIds('lim', round), ovSteps),
        ...repliesFor(ovIds('none', round), ovSteps),
      ]),
    );
    const overhead = { lim: [] as LoadResult[], none: [] as LoadResult[] };
    const limWorkers = await startWorkers(
      [0, 1].map(() => infra.config('fleet-ov-lim', ovChat, { fleetQuota: { requestsPerMinute: NEVER_BINDING_RPM } })),
    );
    const noneWorkers = await startWorkers([0, 1].map(() => infra.config('fleet-ov-none', ovChat)));
    try {
      for (const [index, round] of labels.entries()) {
        const order = index % 2 === 0 ? (['lim', 'none'] as const) : (['none', 'lim'] as const);
        for (const kind of order) {
          const ids = ovIds(kind, round);
          const run = await runSessions(infra, `fleet-ov-${kind}`, ids, capS * 1000);
          const result = await collect(infra, ovChat, ids, ovSteps, run);
          await terminate(client, ids);
          if (round !== 'warm') overhead[kind].push(result);
          console.log(`  overhead ${round} ${kind}: ${fmt((ovSessions * ovSteps) / (result.wallMs / 1000))} steps/s`);
        }
      }
    } finally {
      await stopWorkers([...limWorkers, ...noneWorkers]);
    }

    // 4. Two tenants on one account: B's steps alone, then while A's workers saturate A's own quota.
    const tenants = tenantsOn
      ? await twoTenants(infra, open, startWorkers, stopWorkers, TENANT_ACCOUNT_RPM, capS)
      : undefined;

    return [
      render({
        sessions,
        steps,
        rpm,
        capS,
        limited: limited.result,
        limitedIds: limited.ids,
        limitedChat: limited.chat,
        free: free.result,
        freeChat: free.chat,
        overhead,
        ovSessions,
        ovSteps,
        tenants,
      }),
    ];
  } finally {
    await Promise.all([...live].map((w) => w.stop(3_000).catch(() => undefined)));
    await Promise.all(providers.map((p) => p.close().catch(() => undefined)));
    await pool.end();
    await store.close();
    await connection.close();
    await server.stop();
    await postgres.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface TenantRun {
  readonly accountRpm: number;
  readonly aSteps: number;
  readonly aRpm: number;
  readonly aSessions: number;
  readonly bSessions: number;
  readonly bSteps: number;
  readonly alone: LoadResult;
  readonly busy: LoadResult;
  /** A's admitted calls a second while B's busy run lasted. */
  readonly aRate: number;
  /** 429s the provider sent in the tenant run. */
  readonly refused: number;
}

async function twoTenants(
  infra: Infra,
  open: (replies: Script['replies'], quota?: QuotaOptions) => Promise<ScriptedProvider>,
  startWorkers: (configs: WorkerProcessConfig[]) => Promise<ChildWorker[]>,
  stopWorkers: (workers: readonly ChildWorker[]) => Promise<void>,
  rpm: number,
  capS: number,
): Promise<TenantRun> {
  const aRpm = Math.round(rpm * TENANT_SHARE);
  const aSessions = 30;
  const aSteps = 10;
  const bSessions = 3;
  const bSteps = 6;
  const aIds = idsOf('ta', aSessions);
  const aloneIds = idsOf('tb-alone', bSessions);
  const busyIds = idsOf('tb-busy', bSessions);
  const chat = await open(
    [
      ...repliesFor(aIds, aSteps),
      ...repliesFor(aloneIds, bSteps, TENANT_B_REPLY_MS),
      ...repliesFor(busyIds, bSteps, TENANT_B_REPLY_MS),
    ],
    { requestsPerMinute: rpm, burstSeconds: BURST_SECONDS },
  );
  const limits = { fleetQuota: { requestsPerMinute: rpm }, tenants: { a: { requestsPerMinute: aRpm } } };
  const workers = await startWorkers([
    infra.config('fleet-ta', chat, { ...limits, tenant: 'a' }),
    infra.config('fleet-ta', chat, { ...limits, tenant: 'a' }),
    infra.config('fleet-tb', chat, { ...limits, tenant: 'b' }),
  ]);
  try {
    const alone = await collect(
      infra,
      chat,
      aloneIds,
      bSteps,
      await runSessions(infra, 'fleet-tb', aloneIds, capS * 1000),
    );
    // A's sessions are started and not waited for: each keeps one call in A's queue for the whole B run.
    const aBegan = await startSessions(infra, 'fleet-ta', aIds);
    await sleep(5_000);
    const busyRun = await runSessions(infra, 'fleet-tb', busyIds, capS * 1000);
    const busy = await collect(infra, chat, busyIds, bSteps, busyRun);
    const aResult = await collect(infra, chat, aIds, aSteps, { beganAt: aBegan, endedAt: Date.now(), capped: true });
    await terminate(infra.client, [...aIds, ...aloneIds, ...busyIds]);
    const aSeen = admittedTimes(aResult).filter((at) => at >= busyRun.beganAt && at <= busyRun.endedAt).length;
    const refused = chat.rateLimitedAt().length;
    console.log(`  tenants: B alone ${s1(alone.wallMs)}, B with A saturated ${s1(busy.wallMs)}; ${refused} 429s`);
    return {
      accountRpm: rpm,
      aSteps,
      aRpm,
      aSessions,
      bSessions,
      bSteps,
      alone,
      busy,
      aRate: aSeen / ((busyRun.endedAt - busyRun.beganAt) / 1000),
      refused,
    };
  } finally {
    await stopWorkers(workers);
  }
}

interface Report {
  readonly sessions: number;
  readonly steps: number;
  readonly rpm: number;
  readonly capS: number;
  readonly limited: LoadResult;
  readonly limitedIds: readonly string[];
  readonly limitedChat: ScriptedProvider;
  readonly free: LoadResult;
  readonly freeChat: ScriptedProvider;
  readonly overhead: { lim: LoadResult[]; none: LoadResult[] };
  readonly ovSessions: number;
  readonly ovSteps: number;
  readonly tenants: TenantRun | undefined;
}

function render(r: Report): BenchSection {
  const quotaPerS = r.rpm / 60;
  const burst = quotaPerS * BURST_SECONDS;
  const late = (chat: ScriptedProvider, result: LoadResult) => {
    const first = admittedTimes(result)[0] ?? result.beganAt;
    const all = chat.rateLimitedAt();
    return { all: all.length, late: all.filter((at) => at > first + 1000).length };
  };
  const row = (label: string, result: LoadResult, chat: ScriptedProvider) => {
    const rate = achievedRate(result, burst);
    const refused = late(chat, result);
    return (
      `| ${label} | ${result.completed} / ${result.sessions} | ${result.turnErrors} | ${result.unfinished} | ` +
      `${fmt(rate)}/s | ${x(rate / quotaPerS)} | ${refused.all} | ${refused.late} | ${s1(result.wallMs)}${result.capped ? ' (cap)' : ''} |`
    );
  };
  const spread = halfwaySpread(r.limited, r.limitedIds);
  const waits = inActivity(r.limited);
  const sent = fromSent(r.limited);

  const stepsPerS = (list: readonly LoadResult[]) => list.map((x) => (x.sessions * x.steps) / (x.wallMs / 1000));
  const perStep = (list: readonly LoadResult[]) => list.map((one) => mid(one.turnMs) / one.steps);
  const prep = (list: readonly LoadResult[]) => list.map((one) => mid(inActivity(one)));
  const lim = r.overhead.lim;
  const none = r.overhead.none;
  const ovRows = [
    ['steps/s (fleet)', mid(stepsPerS(lim)), mid(stepsPerS(none)), (v: number) => fmt(v)],
    ["wall per step (a session's turn ÷ its steps, median)", mid(perStep(lim)), mid(perStep(none)), ms],
    ['activity start → provider receipt (median per step)', mid(prep(lim)), mid(prep(none)), ms],
  ] as const;

  const firstSteps = r.limited.records.filter((one) => one.step === 1).map((one) => one.sentAt);
  const startSkewMs = Math.max(...firstSteps) - Math.min(...firstSteps);
  const body = [
    `${r.sessions} sessions × ${r.steps} model steps (one turn each: ${r.steps - 1} echo tool calls, then an answer) on 2 worker`,
    'processes (test/helpers/worker-process.ts, 256 model slots each, as `dh worker` takes with a quota), one PostgreSQL',
    "store (the limiter's clocks are its tables), one dev server, against a scripted provider that enforces",
    `${r.rpm} requests a minute on the workers' shared key (${fmt(quotaPerS)}/s, a ${BURST_SECONDS} s burst, OpenAI's 429 with`,
    `retry-after). The issue's 120 RPM would take ${((r.sessions * r.steps) / 120).toFixed(1)} minutes for this load; ${r.rpm} RPM keeps it short, and`,
    'stays well under what the machine runs without any quota (the steps/s of the overhead table below): a quota near',
    'that measures the machine, not the limiter (`DH_BENCH_FLEET_RPM`, `_SESSIONS`, `_STEPS` change it). With the',
    'limiter the workers get the quota as `fleetQuota` (what `DH_RATE_LIMIT_RPM` does); without it each worker sends',
    "at once, and a 429 fails the attempt, which Temporal retries after the provider's retry-after (8 attempts, then",
    `the turn fails); that run is waited for ${r.capS} s at most. Achieved rate: the answered calls over their span, less the`,
    `burst the provider lets through at once (${fmt(burst)}).`,
    '',
    '| run | turns completed | turn errors | unfinished | achieved rate | / quota | 429s | 429s after 1 s | wall |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    row('fleet limiter', r.limited, r.limitedChat),
    row('no limiter', r.free, r.freeChat),
    '',
    "The limiter's wait per step, from the model-step activity's start (the history's ActivityTaskStarted of its last",
    "attempt) to the provider's receipt of the request it answered: p50",
    `${s1(mid(waits))}, p99 ${s1(percentile(waits, 99))} (${r.sessions} sessions sharing ${fmt(quotaPerS)} calls/s queue ~${s1((r.sessions / quotaPerS) * 1000)} per step; p50 close to p99 is`,
    "the fair order: every session's step waits the same round). From the step's `request/sent` `at` instead (a",
    `simpler proxy; it adds Temporal's dispatch of the activity): p50 ${s1(mid(sent))}, p99 ${s1(percentile(sent, 99))}. The floor without any wait is`,
    "the overhead table's activity start → receipt. Halfway through (when half the calls were answered) each session had",
    `${spread.min} to ${spread.max} answered steps (max / min ${spread.min > 0 ? fmt(spread.max / spread.min) : '∞'}): the spread is the start, not the limiter's order — the last`,
    `session's first step was scheduled ${s1(startSkewMs)} after the first one's (${r.sessions} workflow starts on 2 busy cores), and the`,
    'sessions started first cycle faster while the queue fills.',
    '',
    `The limiter's own cost: ${r.ovSessions} sessions × ${r.ovSteps} steps on 2 worker processes, an unlimited provider, the limiter`,
    `on with ${NEVER_BINDING_RPM.toLocaleString('en-US')} RPM (no call ever waits, but each takes its session's turn, a reservation and`,
    'gives the turn back, in PostgreSQL) against no limiter at all; medians of',
    `${r.overhead.lim.length} rounds each, alternating which goes first, after a warm-up round of each.`,
    '',
    '| figure | limiter (never binding) | no limiter | ratio |',
    '| --- | ---: | ---: | ---: |',
    ...ovRows.map(([label, a, b, f]) => `| ${label} | ${f(a)} | ${f(b)} | ${x(a / b)} |`),
  ];
  const t = r.tenants;
  if (t) {
    const aloneWait = inActivity(t.alone);
    const busyWait = inActivity(t.busy);
    const aQueueMs = t.aSessions * (60_000 / t.aRpm);
    body.push(
      '',
      `Two tenants on one account (${t.accountRpm} RPM for the account, the same on the provider): tenant A (2 worker processes,`,
      `${t.aSessions} sessions × ${t.aSteps} steps, a quota of its own of ${t.aRpm} RPM) and tenant B (1 worker process, no quota of its own,`,
      `${t.bSessions} sessions × ${t.bSteps} steps whose replies take ${TENANT_B_REPLY_MS} ms, so B asks for far less than the account has left). B runs`,
      `alone, then again 5 s after A's sessions started. A's rate over B's second run: ${fmt(t.aRate)}/s against its ${fmt(t.aRpm / 60)}/s (saturated);`,
      `${t.refused} 429s in all.`,
      '',
      '| tenant B | alone | with A saturated | ratio |',
      '| --- | ---: | ---: | ---: |',
      `| activity start → provider receipt, median per step | ${ms(mid(aloneWait))} | ${ms(mid(busyWait))} | ${x(mid(busyWait) / mid(aloneWait))} |`,
      `| the same, max | ${ms(Math.max(...aloneWait))} | ${ms(Math.max(...busyWait))} | ${x(Math.max(...busyWait) / Math.max(...aloneWait))} |`,
      `| wall per step (a turn ÷ its steps, median) | ${ms(mid(t.alone.turnMs) / t.bSteps)} | ${ms(mid(t.busy.turnMs) / t.bSteps)} | ${x(mid(t.busy.turnMs) / mid(t.alone.turnMs))} |`,
      `| steps answered / turns completed | ${aloneWait.length} / ${t.alone.completed} | ${busyWait.length} / ${t.busy.completed} | |`,
      `| wall of the run | ${s1(t.alone.wallMs)} | ${s1(t.busy.wallMs)}${t.busy.capped ? ' (cap)' : ''} | ${x(t.busy.wallMs / t.alone.wallMs)} |`,
      '',
      `A's own queue is ${t.aSessions} calls × ${fmt(60_000 / t.aRpm)} ms = ${s1(aQueueMs)} by arithmetic. A B step waiting about that long`,
      "would mean B queues behind A's backlog; a B step within a few milliseconds of its wait alone means A's backlog",
      "stays on A's own clock (a call waits out its tenant's reservation before it takes one on the account's clock,",
      'src/limiter/fleet-limiter.ts).',
    );
  }
  return { title: 'Fleet rate limiter', command: 'npm run bench -- --only fleet', body: body.join('\n') };
}
