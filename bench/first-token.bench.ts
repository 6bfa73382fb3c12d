// Time to the first streamed token: through the product's CLI (`node bin/dh.mjs run`, against a dev server
// and a `dh worker` process, both on the scripted provider) against a direct `openai` client call to the
// same provider, in-process and from a fresh `node` process; plus where ours spends the difference.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import OpenAI from 'openai';
import { startScriptedProvider, type ScriptedProvider } from '../src/scripted-provider/start-scripted-provider.js';
import type { Script } from '../src/scripted-provider/script.js';
import { sessionWorkflowId } from '../src/shared/session-messages.js';
import { PUBLISH_INTERVAL_MS } from '../src/streaming/delta-channel.js';
import { liveDeltaPathFor, SQLITE_POLL_MS, SqliteDeltaChannel } from '../src/streaming/sqlite-delta-channel.js';
import { fmt, median, type BenchSection } from './measure.js';
import { percentile, startBenchServer } from './harness.bench.js';

export const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
export const DH_BIN = join(REPO_ROOT, 'bin', 'dh.mjs');
export const BENCH_MODEL = 'bench-model';
const KEY_VAR = 'DH_BENCH_PROVIDER_KEY';
/** Longer than the delta channel's publish buffer, so the first row the worker writes holds the first chunk alone. */
const CHUNK_DELAY_MS = 30;

/** Epoch milliseconds with sub-millisecond resolution, comparable across processes on one machine. */
export const epochMs = (): number => performance.timeOrigin + performance.now();

/**
 * The environment of a `dh` child on the scripted provider: the developer's shell minus anything that
 * changes dh's behaviour (as test/cli/live-harness.ts does), then `extra`.
 */
export function dhEnv(providerUrl: string, extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(DH_|TEMPORAL_|DEEPSEEK_|OPENAI_|OTEL_)/.test(key)) continue;
    env[key] = value;
  }
  return {
    ...env,
    NO_COLOR: '1',
    DH_LOG_LEVEL: 'warn',
    DH_PROVIDER: 'scripted',
    DH_BASE_URL: providerUrl,
    DH_MODEL: BENCH_MODEL,
    DH_API_KEY_ENV: KEY_VAR,
    [KEY_VAR]: 'sk-bench-not-a-real-key',
    DH_SHELL_SANDBOX: 'none',
    ...extra,
  };
}

export interface DhRunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly sessionId: string;
  /** Epoch ms: spawn, the `dh-timing` markers (DH_TRACE_TIMING=1), first stdout byte, exit. */
  readonly spawnAt: number;
  readonly sendingAt: number;
  readonly acceptedAt: number;
  readonly firstOutAt: number;
  readonly exitAt: number;
  /** `compiled` or `tsx` (DH_BIN_TRACE=1). */
  readonly entry: string;
}

/** Runs `node bin/dh.mjs run <args>` to its exit, timing it from the outside and by its markers. */
export function runDh(args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<DhRunResult> {
  return new Promise((resolve, reject) => {
    const spawnAt = epochMs();
    const child = spawn(process.execPath, [DH_BIN, 'run', ...args], {
      cwd: REPO_ROOT,
      env: { ...env, DH_TRACE_TIMING: '1', DH_BIN_TRACE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let firstOutAt = Number.NaN;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (stdout === '' && chunk !== '') firstOutAt = epochMs();
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      const exitAt = epochMs();
      const mark = (label: string) => Number(new RegExp(`^dh-timing: ${label} ([\\d.]+)$`, 'm').exec(stderr)?.[1]);
      const sessionId = /^dh: session (\S+)/m.exec(stderr)?.[1] ?? '';
      const entry = /^dh-bin: (compiled|tsx)/m.exec(stderr)?.[1] ?? '?';
      if (code !== 0 || sessionId === '') {
        reject(new Error(`dh run ${args.join(' ')} exited ${code}:\n${stderr.slice(-2_000)}`));
        return;
      }
      resolve({
        code,
        stdout,
        stderr,
        sessionId,
        spawnAt,
        sendingAt: mark('sending'),
        acceptedAt: mark('accepted'),
        firstOutAt,
        exitAt,
        entry,
      });
    });
  });
}

/** A `dh worker` child process, ready (it wrote its ready file); `stop` ends its process group. */
async function startDhWorker(
  env: NodeJS.ProcessEnv,
  dir: string,
): Promise<{ pid: number; log(): string; stop(): Promise<void> }> {
  const readyFile = join(dir, 'worker.ready');
  const logFile = join(dir, 'worker.log');
  const child = spawn(process.execPath, [DH_BIN, 'worker'], {
    cwd: REPO_ROOT,
    env: { ...env, DH_WORKER_READY_FILE: readyFile },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (log += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (log += c));
  let exited = false;
  const closed = new Promise<void>((resolve) =>
    child.once('close', () => {
      exited = true;
      resolve();
    }),
  );
  const pid = child.pid ?? -1;
  const deadline = Date.now() + 120_000;
  while (!(existsSync(readyFile) && readFileSync(readyFile, 'utf8').trim() === String(pid))) {
    if (exited || Date.now() > deadline) {
      if (!exited) process.kill(-pid, 'SIGKILL');
      throw new Error(`dh worker did not get ready:\n${log.slice(-2_000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    pid,
    log: () => log,
    stop: async () => {
      if (exited) return;
      process.kill(-pid, 'SIGTERM');
      const kill = setTimeout(() => process.kill(-pid, 'SIGKILL'), 10_000);
      await closed;
      clearTimeout(kill);
      writeFileSync(logFile, log);
    },
  };
}

/** The baseline in a fresh process: import the SDK, one streamed call, print the content as it comes. */
const NODE_BASELINE = `
const now = () => performance.timeOrigin + performance.now();
const { default: OpenAI } = await import(process.env.BENCH_OPENAI_URL);
const client = new OpenAI({ baseURL: process.env.BENCH_BASE_URL, apiKey: 'sk-bench-not-a-real-key' });
process.stderr.write('call ' + now().toFixed(1) + '\\n');
const stream = await client.chat.completions.create({
  model: process.env.BENCH_MODEL,
  messages: [{ role: 'user', content: 'Say hello.' }],
  stream: true,
});
for await (const chunk of stream) {
  const text = chunk.choices[0]?.delta?.content;
  if (text) process.stdout.write(text);
}
`;

interface NodeBaseline {
  readonly spawnAt: number;
  readonly callAt: number;
  readonly firstOutAt: number;
}

function runNodeBaseline(script: string, providerUrl: string): Promise<NodeBaseline> {
  return new Promise((resolve, reject) => {
    const spawnAt = epochMs();
    const child = spawn(process.execPath, [script], {
      env: {
        ...process.env,
        BENCH_OPENAI_URL: pathToFileURL(createRequire(import.meta.url).resolve('openai')).href,
        BENCH_BASE_URL: providerUrl,
        BENCH_MODEL,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let firstOutAt = Number.NaN;
    let stderr = '';
    child.stdout.on('data', () => {
      if (Number.isNaN(firstOutAt)) firstOutAt = epochMs();
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    child.once('close', (code) => {
      const callAt = Number(/^call ([\d.]+)$/m.exec(stderr)?.[1]);
      if (code !== 0 || Number.isNaN(firstOutAt)) reject(new Error(`baseline script exited ${code}: ${stderr}`));
      else resolve({ spawnAt, callAt, firstOutAt });
    });
  });
}

/** The baseline in-process: a new client (a new connection), one streamed call, ms to the first content chunk. */
async function inProcessBaseline(providerUrl: string): Promise<number> {
  const client = new OpenAI({ baseURL: providerUrl, apiKey: 'sk-bench-not-a-real-key' });
  const begin = performance.now();
  const stream = await client.chat.completions.create({
    model: BENCH_MODEL,
    messages: [{ role: 'user', content: 'Say hello.' }],
    stream: true,
  });
  let first = Number.NaN;
  for await (const chunk of stream) {
    if (Number.isNaN(first) && chunk.choices[0]?.delta?.content) first = performance.now() - begin;
  }
  return first;
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

function eventMs(e: HistoryEvent): number {
  return Number(e.eventTime?.seconds ?? 0) * 1000 + Number(e.eventTime?.nanos ?? 0) / 1e6;
}

/** Where one `dh run`'s time to its first printed delta went, as epoch-ms milestones (NaN: not found). */
interface Milestones {
  readonly accepted: number;
  /** From the workflow history: the followup signal, the workflow task that took it. */
  readonly signaled: number;
  readonly wftScheduled: number;
  readonly wftStarted: number;
  /** The turn's first modelStep activity. */
  readonly modelScheduled: number;
  readonly modelStarted: number;
  /** From the worker's log lines (ms resolution): the batch claimed (session loaded, ingress appended), the request built. */
  readonly claimed: number;
  readonly built: number;
  /** The scripted provider had the request's body. */
  readonly request: number;
  /** The first text delta: the worker got it (its `at` in the delta channel), `dh run` printed it. */
  readonly workerDelta: number;
  readonly printed: number;
}

const MILESTONES: readonly [keyof Milestones, string][] = [
  ['signaled', 'the followup signal is in the history'],
  ['wftScheduled', 'workflow task scheduled'],
  ['wftStarted', 'workflow task started (picked up by the worker)'],
  ['modelScheduled', 'first `modelStep` activity scheduled (new session: after `openSession`, a local activity)'],
  ['modelStarted', '`modelStep` started'],
  ['claimed', 'worker log `messages claimed` (session loaded, ingress appended)'],
  ['built', 'worker log `model request` (claim and step start appended, request built; the gate next)'],
  ['request', 'the provider has the request (gate read, `request/sent` appended, HTTP)'],
  ['workerDelta', 'the worker has the first text delta (its `at` in the delta channel)'],
  ['printed', '`dh run` printed it (the first delta written at once; the follower woken by the file change; pipe)'],
];

function logTime(log: readonly Record<string, unknown>[], sessionId: string, turn: number, msg: string): number {
  const line = log.find((l) => l.sessionId === sessionId && l.turn === turn && l.step === 1 && l.msg === msg);
  return typeof line?.time === 'string' ? Date.parse(line.time) : Number.NaN;
}

async function milestones(
  run: DhRunResult,
  client: Client,
  provider: ScriptedProvider,
  liveDbPath: string,
  workerLog: string,
): Promise<Milestones & { tasksBeforeModel: number }> {
  const history = await client.workflow.getHandle(sessionWorkflowId(run.sessionId)).fetchHistory();
  const events = history.events ?? [];
  // Runs are sequential: the last followup signal is this run's.
  const signalIndex = events.findLastIndex(
    (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'followup',
  );
  const after = events.slice(signalIndex);
  const startedOf = (scheduled: HistoryEvent | undefined) =>
    events.find(
      (e) =>
        String(
          e.workflowTaskStartedEventAttributes?.scheduledEventId ??
            e.activityTaskStartedEventAttributes?.scheduledEventId ??
            '',
        ) === String(scheduled?.eventId),
    );
  const wft = after.find((e) => e.workflowTaskScheduledEventAttributes);
  const modelIndex = after.findIndex((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'modelStep');
  const model = after[modelIndex];
  const tasksBeforeModel = after
    .slice(0, Math.max(0, modelIndex))
    .filter((e) => e.workflowTaskScheduledEventAttributes || e.activityTaskScheduledEventAttributes).length;
  const request = provider
    .requests()
    .find((r) => r.path.endsWith('/chat/completions') && r.receivedAt >= Math.floor(run.sendingAt) - 1);
  const channel = SqliteDeltaChannel.open(liveDbPath);
  let workerDelta = Number.NaN;
  let turn = Number.NaN;
  try {
    const deltas = (await channel.read(run.sessionId, 0)).filter((d) => d.kind === 'text' && d.text !== '');
    turn = Math.max(...deltas.map((d) => d.turn));
    workerDelta = deltas.find((d) => d.turn === turn)?.at ?? Number.NaN;
  } finally {
    await channel.close();
  }
  const log = workerLog
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes(run.sessionId))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const at = (e: HistoryEvent | undefined) => (e ? eventMs(e) : Number.NaN);
  return {
    accepted: run.acceptedAt,
    signaled: at(events[signalIndex]),
    wftScheduled: at(wft),
    wftStarted: at(startedOf(wft)),
    modelScheduled: at(model),
    modelStarted: at(startedOf(model)),
    claimed: logTime(log, run.sessionId, turn, 'messages claimed'),
    built: logTime(log, run.sessionId, turn, 'model request'),
    request: request?.receivedAt ?? Number.NaN,
    workerDelta,
    printed: run.firstOutAt,
    tasksBeforeModel,
  };
}

export async function firstTokenBench(
  rounds = Number(process.env.DH_BENCH_FIRST_TOKEN_ROUNDS ?? 15),
): Promise<BenchSection[]> {
  const dir = mkdtempSync(join(tmpdir(), 'dh-bench-first-token-'));
  const home = join(dir, 'home');
  mkdirSync(home);
  const replyText = 'Hello from the scripted provider, streamed in a few small chunks.';
  const script: Script = {
    models: [BENCH_MODEL],
    cache: 'off',
    replies: [{ text: replyText, chunkSize: 12, chunkDelayMs: CHUNK_DELAY_MS, repeat: 10_000 }],
  };
  const [server, provider] = await Promise.all([startBenchServer(), startScriptedProvider({ script })]);
  const env = dhEnv(provider.url, {
    DH_HOME: home,
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: server.namespace,
    DH_TASK_QUEUE: `bench-first-token-${process.pid}`,
    DH_WORKFLOW_BUNDLE: server.sessionBundlePath,
  });
  const nodeScript = join(dir, 'first-chunk.mjs');
  writeFileSync(nodeScript, NODE_BASELINE);
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace });
  let worker: Awaited<ReturnType<typeof startDhWorker>> | null = null;

  const fresh: DhRunResult[] = [];
  const continued: DhRunResult[] = [];
  type Marks = Milestones & { tasksBeforeModel: number };
  const freshMarks: Marks[] = [];
  const contMarks: Marks[] = [];
  const inProcess: number[] = [];
  const nodeRuns: NodeBaseline[] = [];
  try {
    // At the default log level (info), as a user runs it: its log lines time the model step's phases.
    worker = await startDhWorker({ ...env, DH_LOG_LEVEL: 'info' }, dir);
    const workerLog = () => worker?.log() ?? '';
    const liveDb = liveDeltaPathFor(join(home, 'sessions.db'));
    // Warm-up (not counted): one of each; the continued session is the warm-up's.
    const warm = await runDh(['first-token warm-up'], env);
    const sessionId = warm.sessionId;
    await inProcessBaseline(provider.url);
    await runNodeBaseline(nodeScript, provider.url);
    await runDh(['--session', sessionId, 'first-token warm-up 2'], env);

    const measures: (() => Promise<void>)[] = [
      async () => {
        const run = await runDh([`first-token fresh`], env);
        fresh.push(run);
        freshMarks.push(await milestones(run, client, provider, liveDb, workerLog()));
      },
      async () => {
        const run = await runDh(['--session', sessionId, `first-token continued`], env);
        continued.push(run);
        contMarks.push(await milestones(run, client, provider, liveDb, workerLog()));
      },
      async () => void inProcess.push(await inProcessBaseline(provider.url)),
      async () => void nodeRuns.push(await runNodeBaseline(nodeScript, provider.url)),
    ];
    for (let r = 0; r < rounds; r++) {
      // Interleaved, the order rotated each round, so the machine's noise hits all four alike.
      for (let k = 0; k < measures.length; k++) await measures[(r + k) % measures.length]?.();
    }
  } finally {
    await worker?.stop();
    await connection.close();
    await provider.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const q = (values: number[]) => `${fmt(median(values))} ms | ${fmt(percentile(values, 90))} ms`;
  const acceptedToFirst = (runs: DhRunResult[]) => runs.map((r) => r.firstOutAt - r.acceptedAt);
  // Process start depends on the entry the bin took (compiled dist/cli, or the sources through tsx when
  // another edit made the build stale mid-run): the spawn rows keep the compiled runs when there are enough.
  const all = [...fresh, ...continued];
  const compiledRuns = all.filter((r) => r.entry === 'compiled').length;
  const startRuns = (runs: DhRunResult[]) => {
    const compiled = runs.filter((r) => r.entry === 'compiled');
    return compiled.length >= 5 ? compiled : runs;
  };
  const startToFirst = (runs: DhRunResult[]) => startRuns(runs).map((r) => r.firstOutAt - r.spawnAt);
  const startToSending = (runs: DhRunResult[]) => startRuns(runs).map((r) => r.sendingAt - r.spawnAt);
  const sendingToAccepted = (runs: DhRunResult[]) => runs.map((r) => r.acceptedAt - r.sendingAt);
  const nodeCallToFirst = nodeRuns.map((n) => n.firstOutAt - n.callAt);
  const nodeStartToFirst = nodeRuns.map((n) => n.firstOutAt - n.spawnAt);
  const base = median(inProcess);
  const freshGap = median(acceptedToFirst(fresh)) - base;
  const contGap = median(acceptedToFirst(continued)) - base;
  const verdict = (gap: number) => `**${gap <= 50 ? 'met' : 'missed'}** (+${fmt(gap)} ms)`;

  // Median time of each milestone after `accepted`, and of the step from the milestone before it.
  const since = (marks: Marks[], key: keyof Milestones) => median(marks.map((m) => m[key] - m.accepted));
  const stepTo = (marks: Marks[], k: number) => {
    const [key] = MILESTONES[k] ?? [];
    const [prev] = MILESTONES[k - 1] ?? [];
    return key && prev ? fmt(median(marks.map((m) => m[key] - m[prev]))) : '';
  };
  const channel = [...freshMarks, ...contMarks].map((m) => m.printed - m.workerDelta).filter((v) => !Number.isNaN(v));
  const breakdown = MILESTONES.map(
    ([key, label], k) =>
      `| ${label} | ${fmt(since(freshMarks, key))} | ${stepTo(freshMarks, k)} | ${fmt(since(contMarks, key))} | ${stepTo(contMarks, k)} |`,
  );

  return [
    {
      title: 'Time to first token',
      command: 'npm run bench -- --only first-token',
      body: [
        'How long a user waits for the first streamed token. Ours: `node bin/dh.mjs run <task>` as a user runs it,',
        'against a dev server (`startDevServer`) and a `node bin/dh.mjs worker` process, both on the scripted provider',
        `(loopback; the reply streams ${Math.ceil(replyText.length / 12)} content chunks ${CHUNK_DELAY_MS} ms apart, the first one ${CHUNK_DELAY_MS} ms after the role chunk).`,
        '"Accepted" is the moment the followup signal (signal-with-start) returned inside the `dh run` process, which',
        'prints it with `DH_TRACE_TIMING=1` (`dh-timing: accepted <epoch ms>` on stderr; `sending` just before it);',
        'the first delta is the first byte of its stdout as this process reads it from the pipe. "New session" is',
        '`dh run <task>` (a new workflow each time, as by default); "continued" is `dh run --session <id> <task>` on',
        `one idle session. Baselines: a direct \`openai\` client call (\`chat.completions.create({ stream: true })\`,`,
        'a new client each time) to the same provider, in this process from the call to the first content chunk, and',
        'in a fresh `node` process (a tiny script: import the SDK, call, print the content) from its spawn and from',
        `its call to its first printed chunk. ${rounds} rounds, the four interleaved, medians and p90.`,
        compiledRuns === all.length
          ? 'The `dh` bin ran its compiled JavaScript (dist/cli) every time.'
          : `The \`dh\` bin ran its compiled JavaScript (dist/cli) in ${compiledRuns} of ${all.length} runs, the sources through tsx in the` +
            ` others (an edit elsewhere made the build stale mid-run); the spawn rows use ${startRuns(fresh).length === fresh.length && startRuns(continued).length === continued.length ? 'all runs' : 'the compiled runs only'}.`,
        '',
        '| time to first token | median | p90 | samples |',
        '| --- | ---: | ---: | ---: |',
        `| ours, new session: accepted → first delta printed | ${q(acceptedToFirst(fresh))} | ${fresh.length} |`,
        `| ours, continued session: accepted → first delta printed | ${q(acceptedToFirst(continued))} | ${continued.length} |`,
        `| baseline: openai client call → first chunk (in-process) | ${q(inProcess)} | ${inProcess.length} |`,
        `| baseline: openai client call → first chunk printed (fresh node process) | ${q(nodeCallToFirst)} | ${nodeRuns.length} |`,
        `| ours, new session: \`dh run\` spawn → first delta printed | ${q(startToFirst(fresh))} | ${startRuns(fresh).length} |`,
        `| ours, continued session: \`dh run\` spawn → first delta printed | ${q(startToFirst(continued))} | ${startRuns(continued).length} |`,
        `| baseline: \`node\` spawn → first chunk printed | ${q(nodeStartToFirst)} | ${nodeRuns.length} |`,
        `| of ours (new): spawn → about to send the followup (process start, config, store, connect) | ${q(startToSending(fresh))} | ${startRuns(fresh).length} |`,
        `| of ours (new): sending → accepted (signal-with-start round trip) | ${q(sendingToAccepted(fresh))} | ${fresh.length} |`,
        '',
        `Goal ours (accepted → first delta) ≤ baseline (in-process call → first chunk) + 50 ms: new session ${verdict(freshGap)},`,
        `continued session ${verdict(contGap)}. From process start: ours ${fmt(median(startToFirst(fresh)))} ms (new) vs`,
        `${fmt(median(nodeStartToFirst))} ms for a fresh \`node\` process calling the SDK (${fmt(median(startToFirst(fresh)) / median(nodeStartToFirst))}×).`,
        '',
        'Where ours spends accepted → first delta: each milestone in ms after `accepted` (negative: before the call',
        'returned in `dh run`), and the step from the milestone above (medians per sample, so steps need not add up).',
        "Sources: the workflow history's event times, the worker's log lines (ms resolution), the provider's receive",
        'time of the request, the `at` the worker stamped on the first delta row it published — one clock, one machine.',
        `Tasks dispatched between the signal and the first \`modelStep\` (workflow tasks and activities, median): new session`,
        `${fmt(median(freshMarks.map((m) => m.tasksBeforeModel)), 0)}, continued ${fmt(median(contMarks.map((m) => m.tasksBeforeModel)), 0)}.`,
        '',
        '| milestone | new: after accepted | new: step | continued: after accepted | continued: step |',
        '| --- | ---: | ---: | ---: | ---: |',
        ...breakdown,
        '',
        `The delta channel's step (worker has the delta → printed) over all ${freshMarks.length + contMarks.length} runs: min ${fmt(Math.min(...channel))} ms,`,
        `median ${fmt(median(channel))} ms, max ${fmt(Math.max(...channel))} ms. The first delta of a step is written at once (later ones are`,
        `coalesced every ${PUBLISH_INTERVAL_MS} ms), and \`dh run\`'s follower is woken by the delta file's change (its ${SQLITE_POLL_MS} ms poll is the fallback).`,
      ].join('\n'),
    },
  ];
}
