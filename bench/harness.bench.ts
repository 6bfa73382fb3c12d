// Shared by the Temporal benchmark sections (not a section itself): a dev server with both workflow
// bundles, a session stack built like the product's worker (scripted provider on loopback, SQLite store,
// the echo tool) whose store is instrumented to count appends and reads and to time each `turn/end`.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { RequestHeader, SessionEvent } from '../src/core/index.js';
import type { HeaderContext } from '../src/activities/session-runtime.js';
import type { ToolDefinition } from '../src/plugins/contracts.js';
import { bundleSessionWorkflows } from '../src/local-stack/bundle-workflows.js';
import { startDevServer } from '../src/local-stack/dev-server.js';
import { resolveTemporalCli } from '../src/local-stack/temporal-cli.js';
import { startScriptedProvider, type ScriptedProvider } from '../src/scripted-provider/start-scripted-provider.js';
import type { Script } from '../src/scripted-provider/script.js';
import type { ProviderProfile } from '../src/providers/provider-profiles.js';
import { followupSignal, sessionWorkflowId, steerSignal } from '../src/shared/session-messages.js';
import { SqliteSessionStore } from '../src/stores/sqlite-session-store.js';
import { createSessionWorker } from '../src/worker/create-session-worker.js';
import { defaultHeaderComposer } from '../src/worker/default-header.js';
import { agentSession } from '../src/workflows/session-workflow.js';
import { SCENARIO_MODEL, scriptedProfile } from '../test/helpers/scenario-runtime.js';
import { echoTool } from '../test/helpers/test-tools.js';
import { startBareWorker, type BareWorker } from './bare/bare-worker.js';

export const SYSTEM_PROMPT = 'You are a benchmark agent.';
const DH_BIN = fileURLToPath(new URL('../bin/dh.mjs', import.meta.url));

export interface BenchServer {
  readonly address: string;
  readonly namespace: string;
  /** The dev server's pid (`temporal server start-dev` is the server process itself). */
  readonly pid: number;
  readonly sessionBundlePath: string;
  stop(): Promise<void>;
}

/** `tracing`: the session bundle carries the OpenTelemetry workflow interceptors (their spans are dropped). */
export async function startBenchServer(options: { tracing?: boolean } = {}): Promise<BenchServer> {
  const [cliPath, { codePath }] = await Promise.all([
    resolveTemporalCli(),
    bundleSessionWorkflows(undefined, { tracing: options.tracing === true }),
  ]);
  const server = await startDevServer({ cliPath });
  return {
    address: server.address,
    namespace: server.namespace,
    pid: server.pid,
    sessionBundlePath: codePath,
    stop: server.stop,
  };
}

export function startBare(server: BenchServer): Promise<BareWorker> {
  return startBareWorker(server.address, server.namespace);
}

/** CPU time (user + system) a process has used so far, in ms (Linux; clock ticks of 10 ms). */
export function processCpuMs(pid: number): number {
  // Fields after the command name (which may hold spaces, so split after its closing paren): utime is 14th, stime 15th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** VmRSS of a process in bytes (Linux). */
export function vmRssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : Number.NaN;
}

export interface StoreCounts {
  appends: number;
  reads: number;
}

export interface StackOptions {
  readonly script: Script;
  /** Renders something into the system prompt per step (the cache baseline's anti-pattern). */
  readonly systemPerStep?: (context: HeaderContext) => string;
  readonly modelConcurrency?: number;
  readonly toolConcurrency?: number;
  /** The session worker's sticky workflow cache (Temporal's maxCachedWorkflows); SDK default when absent. */
  readonly maxCachedWorkflows?: number;
  /**
   * Runs the provider in a process of its own (`dh scripted-provider`), as a real provider is remote: the
   * bench process's CPU is then the worker's (and the clients') alone, and `providerPid` names the other.
   */
  readonly providerProcess?: boolean;
}

export interface SessionStack {
  readonly client: Client;
  readonly store: SqliteSessionStore;
  /** The provider in this process; absent with `providerProcess` (then `providerPid` names its process). */
  readonly provider?: ScriptedProvider;
  readonly providerPid?: number;
  readonly profile: ProviderProfile;
  readonly tools: ReadonlyMap<string, ToolDefinition>;
  readonly taskQueue: string;
  readonly counts: StoreCounts;
  /** Store counts when each `assistant/message` was appended, per session, in order. */
  readonly answerMarks: Map<string, StoreCounts[]>;
  /** Signal-with-start of a followup. */
  start(sessionId: string, content: string): Promise<WorkflowHandle<typeof agentSession>>;
  steer(sessionId: string, content: string): Promise<void>;
  /** performance.now() when the `turn/end` of `turn` was appended (waits for it). */
  turnEnd(sessionId: string, turn: number, timeoutMs?: number): Promise<number>;
  read(sessionId: string): Promise<SessionEvent[]>;
  stop(): Promise<void>;
}

let counter = 0;

export async function startSessionStack(server: BenchServer, options: StackOptions): Promise<SessionStack> {
  const dir = mkdtempSync(join(tmpdir(), 'dh-bench-'));
  const script: Script = { models: [SCENARIO_MODEL], ...options.script };
  const provider = options.providerProcess
    ? await startProviderProcess(script, dir)
    : { inProcess: await startScriptedProvider({ script }) };
  const providerUrl = 'inProcess' in provider ? provider.inProcess.url : provider.url;
  const profile = scriptedProfile(providerUrl);
  const store = SqliteSessionStore.open(join(dir, 'sessions.db'));
  const counts: StoreCounts = { appends: 0, reads: 0 };
  const answerMarks = new Map<string, StoreCounts[]>();
  const ended = new Map<string, number>();
  const waiters = new Map<string, (at: number) => void>();
  const append = store.append.bind(store);
  const read = store.read.bind(store);
  store.append = async (sessionId, expectedSeq, events) => {
    counts.appends++;
    const result = await append(sessionId, expectedSeq, events);
    const now = performance.now();
    for (const e of events) {
      if (e.type === 'assistant/message') {
        const marks = answerMarks.get(sessionId) ?? [];
        marks.push({ ...counts });
        answerMarks.set(sessionId, marks);
      }
      if (e.type !== 'turn/end') continue;
      const key = `${sessionId}:${e.turn}`;
      if (!ended.has(key)) ended.set(key, now);
      waiters.get(key)?.(now);
    }
    return result;
  };
  store.read = (sessionId, fromSeq, toSeq) => {
    counts.reads++;
    return read(sessionId, fromSeq, toSeq);
  };
  const tools = new Map([[echoTool.schema.name, echoTool]]);
  const config = { provider: profile.name, model: SCENARIO_MODEL, includeUsage: true };
  const base = defaultHeaderComposer({ config, system: SYSTEM_PROMPT, tools });
  const perStep = options.systemPerStep;
  const composeHeader = perStep
    ? async (context: HeaderContext): Promise<RequestHeader> => ({
        ...(await base(context)),
        system: `${SYSTEM_PROMPT}\n${perStep(context)}`,
      })
    : base;
  const taskQueue = `bench-${process.pid}-${++counter}`;
  const worker = await createSessionWorker({
    address: server.address,
    namespace: server.namespace,
    taskQueue,
    workflowBundlePath: server.sessionBundlePath,
    ...(options.modelConcurrency !== undefined ? { modelConcurrency: options.modelConcurrency } : {}),
    ...(options.toolConcurrency !== undefined ? { toolConcurrency: options.toolConcurrency } : {}),
    ...(options.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: options.maxCachedWorkflows } : {}),
    runtime: {
      store,
      profile,
      apiKey: 'sk-bench-not-a-real-key',
      tools,
      composeHeader,
      idleTimeoutMs: 60_000,
      heartbeatMs: 500,
    },
  });
  const running = worker.run();
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace });
  let messages = 0;
  return {
    client,
    store,
    ...('inProcess' in provider ? { provider: provider.inProcess } : { providerPid: provider.pid }),
    profile,
    tools,
    taskQueue,
    counts,
    answerMarks,
    start: (sessionId, content) =>
      client.workflow.signalWithStart(agentSession, {
        workflowId: sessionWorkflowId(sessionId),
        taskQueue,
        args: [{ sessionId }],
        signal: followupSignal,
        signalArgs: [{ content, messageId: `m-${++messages}` }],
      }),
    steer: (sessionId, content) =>
      client.workflow
        .getHandle(sessionWorkflowId(sessionId))
        .signal(steerSignal, { content, messageId: `m-${++messages}` }),
    turnEnd: (sessionId, turn, timeoutMs = 600_000) => {
      const key = `${sessionId}:${turn}`;
      const done = ended.get(key);
      if (done !== undefined) return Promise.resolve(done);
      return new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(key);
          reject(new Error(`${sessionId}: turn ${turn} did not end within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.set(key, (at) => {
          clearTimeout(timer);
          waiters.delete(key);
          resolve(at);
        });
      });
    },
    read: (sessionId) => read(sessionId),
    stop: async () => {
      await worker.shutdown();
      await running;
      await connection.close();
      await ('inProcess' in provider ? provider.inProcess.close() : provider.stop());
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `dh scripted-provider` in a child process serving `script`; resolves once it printed its base URL. */
async function startProviderProcess(
  script: Script,
  dir: string,
): Promise<{ url: string; pid: number; stop: () => Promise<void> }> {
  const scriptFile = join(dir, 'provider-script.json');
  writeFileSync(scriptFile, JSON.stringify(script));
  const child = spawn(process.execPath, [DH_BIN, 'scripted-provider', '--script', scriptFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit');
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.startsWith('http'));
      if (line) resolve(line.trim());
    });
    void exited.then(([code]) => reject(new Error(`dh scripted-provider exited (${String(code)}): ${stderr}`)));
  });
  return {
    url,
    pid: child.pid ?? -1,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A tool call whose arguments (and the echo's output) are about `chars` characters. */
export function echoCall(id: string, chars: number): { id: string; name: string; arguments: string } {
  return {
    id,
    name: 'echo',
    arguments: JSON.stringify({ text: 'lorem ipsum '.repeat(Math.ceil(chars / 12)).slice(0, chars) }),
  };
}

/** The script replies of one turn: `toolSteps` steps with one echo call each, then an answer. */
export function turnReplies(tag: string, toolSteps: number, chars = 200) {
  return [
    ...(toolSteps > 0
      ? [{ match: { lastUserContains: tag }, toolCalls: [echoCall('call-1', chars)], repeat: toolSteps }]
      : []),
    { match: { lastUserContains: tag }, text: `Done with ${tag} after ${toolSteps} tool calls.` },
  ];
}

/** p-th percentile (nearest rank) of `values`. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

/** Consecutive differences. */
export function deltas(values: readonly number[]): number[] {
  return values.slice(1).map((v, i) => v - (values[i] ?? v));
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

function eventMs(e: HistoryEvent): number {
  return Number(e.eventTime?.seconds ?? 0) * 1000 + Number(e.eventTime?.nanos ?? 0) / 1e6;
}

/** Where one step's time went, from the history's own timestamps (ms). */
export interface StepPhases {
  /** Workflow and activity tasks: scheduled → started. */
  dispatch: number;
  /** Workflow tasks: started → completed (the worker running workflow code, and the round trip). */
  workflowTasks: number;
  /** Activity tasks by type: started → completed (or failed / cancelled). */
  activities: Record<string, number>;
}

/**
 * Per step (delimited by the scheduling of `stepActivity`), where the time went: dispatch waits,
 * workflow-task run time and activity run time by type; steps `from`..`to` (0-based, exclusive end).
 */
export function stepPhases(
  events: readonly HistoryEvent[],
  stepActivity: string,
  from: number,
  to: number,
): StepPhases[] {
  const scheduledAt = new Map<string, number>();
  const startedAt = new Map<string, number>();
  const activityType = new Map<string, string>();
  const perStep: StepPhases[] = [];
  for (const e of events) {
    const id = String(e.eventId);
    const scheduledType = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (scheduledType === stepActivity) perStep.push({ dispatch: 0, workflowTasks: 0, activities: {} });
    const step = perStep.at(-1);
    if (e.activityTaskScheduledEventAttributes || e.workflowTaskScheduledEventAttributes) {
      scheduledAt.set(id, eventMs(e));
      if (scheduledType) activityType.set(id, scheduledType);
    }
    const started =
      e.activityTaskStartedEventAttributes?.scheduledEventId ?? e.workflowTaskStartedEventAttributes?.scheduledEventId;
    if (started !== undefined && started !== null) {
      startedAt.set(String(started), eventMs(e));
      const at = scheduledAt.get(String(started));
      if (at !== undefined && step) step.dispatch += eventMs(e) - at;
    }
    const wftDone = e.workflowTaskCompletedEventAttributes ?? e.workflowTaskFailedEventAttributes;
    if (wftDone?.scheduledEventId !== undefined && wftDone.scheduledEventId !== null && step) {
      const at = startedAt.get(String(wftDone.scheduledEventId));
      if (at !== undefined) step.workflowTasks += eventMs(e) - at;
    }
    const actDone =
      e.activityTaskCompletedEventAttributes ??
      e.activityTaskFailedEventAttributes ??
      e.activityTaskCanceledEventAttributes;
    if (actDone?.scheduledEventId !== undefined && actDone.scheduledEventId !== null && step) {
      const key = String(actDone.scheduledEventId);
      const at = startedAt.get(key);
      const type = activityType.get(key) ?? '?';
      if (at !== undefined) step.activities[type] = (step.activities[type] ?? 0) + (eventMs(e) - at);
    }
  }
  return perStep.slice(from, to);
}
