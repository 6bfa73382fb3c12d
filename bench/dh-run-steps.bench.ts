// `dh run` per-step latency on the embedded local stack (the Temporal dev server and background worker that
// `dh run` starts by itself under DH_HOME), before and after the transfer-queue reader was unthrottled: the
// same turns of ~10 tool steps with the server as shipped, and with the server started through a wrapper
// that drops the `history.transferProcessorMaxPoll*` dynamic config values (the defaults of before).
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { bundleSessionWorkflows } from '../src/local-stack/bundle-workflows.js';
import { freePort, QUEUE_READER_DYNAMIC_CONFIG } from '../src/local-stack/dev-server.js';
import { resolveTemporalCli } from '../src/local-stack/temporal-cli.js';
import { startScriptedProvider } from '../src/scripted-provider/start-scripted-provider.js';
import type { Script } from '../src/scripted-provider/script.js';
import { sessionWorkflowId } from '../src/shared/session-messages.js';
import { SqliteSessionStore } from '../src/stores/sqlite-session-store.js';
import { BENCH_MODEL, DH_BIN, dhEnv, REPO_ROOT, runDh } from './first-token.bench.js';
import { deltas, percentile } from './harness.bench.js';
import { fmt, median, type BenchSection } from './measure.js';

type Variant = 'unthrottled' | 'throttled';

/** `node bin/dh.mjs <args>` to its exit (stdout and stderr collected). */
function dh(args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [DH_BIN, ...args], {
      cwd: REPO_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/** A wrapper that drops the `--dynamic-config-value` pairs whose value matches `dropRe`, then runs `cli`. */
function writeDroppingWrapper(path: string, cli: string, dropRe: string): void {
  writeFileSync(
    path,
    [
      '#!/usr/bin/env bash',
      '# Written by bench/dh-run-steps.bench.ts: the Temporal CLI minus some dynamic config values.',
      `DROP_RE=${JSON.stringify(dropRe)}`,
      'args=()',
      'while [ $# -gt 0 ]; do',
      '  if [ "$1" = "--dynamic-config-value" ] && [[ "$2" =~ $DROP_RE ]]; then shift 2; continue; fi',
      '  args+=("$1"); shift',
      'done',
      `exec ${JSON.stringify(cli)} "\${args[@]}"`,
      '',
    ].join('\n'),
  );
  chmodSync(path, 0o755);
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

function eventMs(e: HistoryEvent): number {
  return Number(e.eventTime?.seconds ?? 0) * 1000 + Number(e.eventTime?.nanos ?? 0) / 1e6;
}

/** Per step (from one modelStep's scheduling to the next): tasks dispatched and the sum of their scheduled → started waits. */
function dispatchPerStep(events: readonly HistoryEvent[]): { tasks: number; waitMs: number }[] {
  const scheduledAt = new Map<string, number>();
  const steps: { tasks: number; waitMs: number }[] = [];
  for (const e of events) {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'modelStep') steps.push({ tasks: 0, waitMs: 0 });
    if (e.activityTaskScheduledEventAttributes || e.workflowTaskScheduledEventAttributes)
      scheduledAt.set(String(e.eventId), eventMs(e));
    const started =
      e.activityTaskStartedEventAttributes?.scheduledEventId ?? e.workflowTaskStartedEventAttributes?.scheduledEventId;
    const step = steps.at(-1);
    const at = started !== undefined && started !== null ? scheduledAt.get(String(started)) : undefined;
    if (step && at !== undefined) {
      step.tasks++;
      step.waitMs += eventMs(e) - at;
    }
  }
  return steps;
}

interface StackRun {
  readonly variant: Variant;
  readonly perStep: number[];
  readonly turnMs: number[];
  readonly dispatch: { tasks: number; waitMs: number }[];
  /** The running server's command line carried the unthrottling values. */
  readonly unthrottledFlags: boolean;
  readonly startMs: number;
}

export async function dhRunStepsBench(
  rounds = Number(process.env.DH_BENCH_DH_RUN_ROUNDS ?? 3),
  turnsPerStack = Number(process.env.DH_BENCH_DH_RUN_TURNS ?? 3),
  toolSteps = Number(process.env.DH_BENCH_DH_RUN_STEPS ?? 10),
): Promise<BenchSection[]> {
  const dir = mkdtempSync(join(tmpdir(), 'dh-bench-dh-run-'));
  const variants: Variant[] = ['unthrottled', 'throttled'];
  const sessionIds = (variant: Variant, round: number) =>
    Array.from({ length: turnsPerStack + 1 }, (_, t) => `steps-${variant}-${round}-${t}`);
  const tags = variants.flatMap((v) =>
    Array.from({ length: rounds }, (_, r) => sessionIds(v, r).map((id) => `task ${id}:`)).flat(),
  );
  const script: Script = {
    models: [BENCH_MODEL],
    cache: 'off',
    mode: 'match',
    replies: tags.flatMap((tag, k) => [
      ...Array.from({ length: toolSteps }, (_, i) => ({
        match: { lastUserContains: tag },
        // Distinct arguments every step: the repeat guard injects a note after identical calls.
        toolCalls: [
          i % 2 === 0
            ? { id: `call_${k}_${i}`, name: 'list_dir', arguments: JSON.stringify({ path: `dir-${i}` }) }
            : { id: `call_${k}_${i}`, name: 'read_file', arguments: JSON.stringify({ path: `file-${i}.txt` }) },
        ],
      })),
      { match: { lastUserContains: tag }, text: `Done: ${toolSteps} tool steps for ${tag}` },
    ]),
  };
  const realCli = await resolveTemporalCli();
  const wrapper = join(dir, 'temporal-throttled.sh');
  const dropRe = '^history\\.transferProcessorMaxPoll';
  writeDroppingWrapper(wrapper, realCli, dropRe);
  const [provider, { codePath: bundle }] = await Promise.all([
    startScriptedProvider({ script }),
    bundleSessionWorkflows(),
  ]);
  const runs: StackRun[] = [];
  const entries: string[] = [];

  const runStack = async (variant: Variant, round: number): Promise<void> => {
    const home = join(dir, `${variant}-${round}`);
    const port = await freePort();
    const env = dhEnv(provider.url, {
      DH_HOME: home,
      DH_TEMPORAL_PORT: String(port),
      DH_TEMPORAL_UI_PORT: '0',
      DH_TASK_QUEUE: 'dh-sessions',
      DH_WORKFLOW_BUNDLE: bundle,
      TEMPORAL_CLI_PATH: variant === 'throttled' ? wrapper : realCli,
    });
    const ids = sessionIds(variant, round);
    for (const id of ids) {
      // The worker's workspace of a session: <DH_HOME>/workspaces/<session> (src/worker/start-worker.ts).
      const workspace = join(home, 'workspaces', id);
      for (let i = 0; i < toolSteps; i++) {
        mkdirSync(join(workspace, `dir-${i}`), { recursive: true });
        writeFileSync(join(workspace, `dir-${i}`, 'main.ts'), `export const answer = ${i};\n`);
        writeFileSync(join(workspace, `file-${i}.txt`), `File ${i} of a small workspace for the dh-run benchmark.\n`);
      }
    }
    try {
      // The first `dh run` starts the stack (server, then the background worker) and runs an uncounted turn.
      const startBegin = performance.now();
      const first = await runDh(['--session', ids[0] ?? '', `task ${ids[0]}: go`], env, 300_000);
      const startMs = performance.now() - startBegin;
      entries.push(first.entry);
      const record = JSON.parse(readFileSync(join(home, 'stack.json'), 'utf8')) as { temporal?: { pid?: number } };
      const cmdline = readFileSync(`/proc/${record.temporal?.pid ?? 0}/cmdline`, 'utf8');
      const unthrottledFlags = Object.keys(QUEUE_READER_DYNAMIC_CONFIG).every((key) => cmdline.includes(key));
      const turnMs: number[] = [];
      for (const id of ids.slice(1)) {
        const run = await runDh(['--session', id, `task ${id}: go`], env);
        turnMs.push(run.exitAt - run.acceptedAt);
      }
      const store = SqliteSessionStore.open(join(home, 'sessions.db'));
      const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
      const client = new Client({ connection, namespace: 'default' });
      const perStep: number[] = [];
      const dispatch: { tasks: number; waitMs: number }[] = [];
      try {
        for (const id of ids.slice(1)) {
          const events = await store.read(id);
          const answers = events.flatMap((e) => (e.type === 'assistant/message' ? [e.at] : []));
          if (answers.length !== toolSteps + 1) throw new Error(`${id}: ${answers.length} answers logged`);
          perStep.push(...deltas(answers));
          const history = await client.workflow.getHandle(sessionWorkflowId(id)).fetchHistory();
          dispatch.push(...dispatchPerStep(history.events ?? []).slice(0, toolSteps));
        }
      } finally {
        await connection.close();
        await store.close();
      }
      runs.push({ variant, perStep, turnMs, dispatch, unthrottledFlags, startMs });
    } finally {
      const down = await dh(['down'], env);
      if (down.code !== 0) process.stderr.write(`dh down (${variant}) exited ${down.code}: ${down.output}\n`);
    }
  };

  try {
    for (let r = 0; r < rounds; r++) {
      // Interleaved, the order alternating per round.
      for (const variant of r % 2 === 0 ? variants : [...variants].reverse()) await runStack(variant, r);
    }
  } finally {
    await provider.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const of = (variant: Variant) => runs.filter((run) => run.variant === variant);
  const steps = (variant: Variant) => of(variant).flatMap((run) => run.perStep);
  const turns = (variant: Variant) => of(variant).flatMap((run) => run.turnMs);
  const dispatchWait = (variant: Variant) => of(variant).flatMap((run) => run.dispatch.map((d) => d.waitMs));
  const tasks = (variant: Variant) => median(of(variant).flatMap((run) => run.dispatch.map((d) => d.tasks)));
  const flags = (variant: Variant) =>
    of(variant).every((run) => run.unthrottledFlags)
      ? 'present'
      : of(variant).every((run) => !run.unthrottledFlags)
        ? 'absent'
        : 'mixed';
  const u = median(steps('unthrottled'));
  const t = median(steps('throttled'));
  const row = (label: string, variant: Variant) =>
    `| ${label} | ${fmt(median(steps(variant)))} ms | ${fmt(percentile(steps(variant), 90))} ms | ` +
    `${fmt(median(dispatchWait(variant)))} ms (${fmt(tasks(variant), 0)} tasks) | ${fmt(median(turns(variant)))} ms | ` +
    `${flags(variant)} | ${steps(variant).length} |`;
  return [
    {
      title: '`dh run` per-step latency, before and after unthrottling',
      command: 'npm run bench -- --only dh-run',
      body: [
        `Turns of ${toolSteps} tool steps and an answer run through \`node bin/dh.mjs run --session <new id> <task>\` on the`,
        'embedded local stack: the first `dh run` under a fresh temporary DH_HOME (free port, no Web UI) starts the',
        'Temporal dev server and the background worker itself and runs one uncounted turn; then',
        `${turnsPerStack} measured turns, each a new session; then \`dh down\`. The scripted provider (loopback, no delay) answers`,
        'each step with one tool call, alternating `list_dir dir-<i>` and `read_file file-<i>.txt` on a small workspace.',
        "Per step: the gaps between consecutive `assistant/message` events' `at` in the session log (read from the",
        `SQLite store; ${toolSteps} gaps per turn: one tool step and the next model step each). Unthrottled: the server as`,
        'shipped (`REQUIRED_DYNAMIC_CONFIG`). Throttled (before): `TEMPORAL_CLI_PATH` points at a wrapper the bench writes',
        `that drops the \`--dynamic-config-value\` pairs matching \`${dropRe}\` and execs the real CLI, so the`,
        "transfer-queue reader runs at Temporal's defaults. The server's command line (`/proc/<pid>/cmdline`) is checked",
        `for the values. ${rounds} stacks per variant, interleaved; medians over all steps. The first \`dh run\` of each stack (which starts the worker) ran the compiled JavaScript (dist/cli) in ${entries.filter((e) => e === 'compiled').length} of ${entries.length} stacks.`,
        '',
        '| server | per step (median) | p90 | dispatch waits per step (history: scheduled → started, summed) | turn (accepted → exit) | unthrottling values on the command line | steps |',
        '| --- | ---: | ---: | ---: | ---: | --- | ---: |',
        row('unthrottled (as shipped)', 'unthrottled'),
        row('throttled (before)', 'throttled'),
        '',
        `Throttled / unthrottled per step: **${fmt(t / u)}×** (${fmt(t)} ms → ${fmt(u)} ms). Stack start (first \`dh run\`,`,
        `server + worker + one turn): ${fmt(median(of('unthrottled').map((r) => r.startMs)) / 1000, 1)} s unthrottled, ${fmt(median(of('throttled').map((r) => r.startMs)) / 1000, 1)} s throttled.`,
      ].join('\n'),
    },
  ];
}
