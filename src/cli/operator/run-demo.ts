// `dh demo`: an offline tour. A scripted provider runs in this process, Temporal comes from the local
// stack (or TEMPORAL_ADDRESS), and a worker child process points at the provider on its own task queue.
// One session goes through a followup, a tool call, a steer with an inject, an interrupt and a worker
// killed with SIGKILL mid-stream (then restarted), and ends with its audit.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { auditSession } from '../../audit/audit-session.js';
import { SessionClient } from '../../client/session-client.js';
import { temporalTlsFromEnv } from '../../config/temporal-tls.js';
import type { WorkerConfig } from '../../config/worker-config.js';
import { DhError, type SessionEvent } from '../../core/index.js';
import { ensureLocalStack } from '../../local-stack/local-stack.js';
import { writeSessionWorkflowBundle } from '../../local-stack/workflow-bundle-cache.js';
import { sessionWorkflowId } from '../../shared/session-messages.js';
import { startScriptedProvider, type ScriptedProvider } from '../../scripted-provider/start-scripted-provider.js';
import type { SessionStore } from '../../stores/session-store.js';
import { loadCliConfig } from '../cli-context.js';
import { openSessionStore } from '../../stores/open-session-store.js';
import { ExitCode, writeOut } from './cli-io.js';
import { renderAuditReport } from './render-audit.js';
import { demoForkPoint, narrateDemo } from './demo-narration.js';
import { DEMO_FAILED, DemoWorker } from './demo-worker.js';
import { clientDataConverter } from '../../codec/aes-gcm-codec.js';

export const DEMO_MODEL = 'demo-model';
export const DEMO_KEY_ENV = 'DH_DEMO_API_KEY';
const DEFAULT_SCRIPT = fileURLToPath(new URL('../../../examples/scripts/demo.yaml', import.meta.url));
const WAIT_MS = 60_000;
/** A killed worker's model step is retried after its heartbeat timeout (10 s) and a backoff. */
const RECOVERY_MS = 120_000;

export async function demoCommand(options: { script?: string }): Promise<void> {
  const base = loadCliConfig();
  const demo = new Demo(base, options.script ?? DEFAULT_SCRIPT);
  // Ctrl-C or a TERM mid-demo must not leave its worker (its own process group, not in stack.json, so
  // `dh down` would not find it) or its session's workflow behind.
  const interrupted = (signal: NodeJS.Signals): void => {
    say(`\n${signal}: stopping the demo worker and closing the demo session`);
    void demo.cleanup().finally(() => process.exit(signal === 'SIGINT' ? ExitCode.Detached : 143));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    const ok = await demo.run();
    if (!ok) process.exitCode = ExitCode.Error;
  } finally {
    await demo.cleanup();
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
}

class Demo {
  readonly #cleanups: Array<() => Promise<void>> = [];
  readonly #sessionId = `demo-${new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14)}-${Math.random().toString(16).slice(2, 6)}`;
  readonly #taskQueue = `dh-demo-${this.#sessionId}`;
  #store: SessionStore | null = null;
  #cleaning: Promise<void> | null = null;
  /** Set until the session's workflow has completed: a failed demo terminates it (its worker is gone). */
  #openSession: (() => Promise<void>) | null = null;
  #worker: DemoWorker | null = null;
  #logFile = '';

  constructor(
    readonly config: WorkerConfig,
    readonly script: string,
  ) {}

  async run(): Promise<boolean> {
    const { config } = this;
    const id = this.#sessionId;
    say(`dh demo: session ${id}, offline on the scripted provider (${this.script})`);

    const provider = await startScriptedProvider({ script: this.script });
    this.#cleanups.push(() => provider.close());
    say(`  scripted provider on ${provider.url}`);

    const stack = await ensureLocalStack(config, {
      startWorker: false,
      log: (line) => say(`  local stack: ${line}`),
    });
    say(`  Temporal at ${stack.address} (namespace ${stack.namespace})`);
    await mkdir(join(config.home, 'logs'), { recursive: true });
    this.#logFile = join(config.home, 'logs', `demo-worker-${id}.log`);
    const bundle = config.workflowBundlePath ?? (await this.#bundle());
    const worker = new DemoWorker({
      env: this.#envFor(provider, stack.address, stack.namespace, bundle),
      readyFile: join(config.home, 'demo', `worker-${id}.ready`),
      logFile: this.#logFile,
      taskQueue: this.#taskQueue,
      say,
    });
    this.#worker = worker;

    if (!config.store.includes('://') && config.store !== ':memory:') await mkdir(config.home, { recursive: true });
    const store = await openSessionStore(config.store, { logKey: config.logKey });
    this.#store = store;
    this.#cleanups.push(() => store.close());
    const tls = temporalTlsFromEnv();
    const connection = await Connection.connect({ address: stack.address, ...(tls !== undefined ? { tls } : {}) });
    this.#cleanups.push(() => connection.close());
    const client = new Client({ connection, namespace: stack.namespace, ...clientDataConverter() });
    const sessions = new SessionClient(client, { taskQueue: this.#taskQueue });
    this.#openSession = async () => {
      await client.workflow.getHandle(sessionWorkflowId(id)).terminate('dh demo failed');
    };

    await worker.start();
    const workspace = join(config.home, 'workspaces', id);
    await mkdir(workspace, { recursive: true });
    await writeFile(join(workspace, 'notes.txt'), 'Written by dh demo before turn 2.\n');

    say('\n1. followup: a first turn');
    await sessions.followup(id, 'Hello! What can you do?', {
      start: true,
      source: 'demo',
      messageId: 'demo-1-followup',
    });
    await this.#turnEnd(1);

    say('2. followup that makes the model call a tool (list_dir in the session workspace)');
    await sessions.followup(id, 'List the files in your workspace.', { source: 'demo', messageId: 'demo-2-followup' });
    await this.#turnEnd(2);

    say('3. followup; while its first step streams, an inject (no wake) and a steer (next step) arrive');
    await sessions.followup(id, 'Draft a release plan.', { source: 'demo', messageId: 'demo-3-followup' });
    await this.#waitFor('request/sent/3.1');
    await sessions.inject(id, 'The release branch is now main.', { source: 'demo', messageId: 'demo-3-inject' });
    await sessions.steer(id, 'Use YAML, not JSON.', { source: 'demo', messageId: 'demo-3-steer' });
    await this.#turnEnd(3);

    say('4. followup with a long answer, interrupted mid-stream');
    await sessions.followup(id, 'Write a long essay about durable execution.', {
      source: 'demo',
      messageId: 'demo-4-followup',
    });
    await this.#waitFor('request/sent/4.1');
    await sleep(2_000);
    await sessions.interrupt(id, 'demo: enough');
    await this.#turnEnd(4);

    say('5. followup; the worker is killed with SIGKILL mid-stream, then started again');
    await sessions.followup(id, 'Summarize the session so far.', { source: 'demo', messageId: 'demo-5-followup' });
    await this.#waitFor('request/sent/5.1');
    await sleep(500);
    const killed = worker.pid;
    await worker.kill();
    say(
      `   worker pid ${killed ?? '?'} killed (SIGKILL); starting a new one — the step retries after its heartbeat timeout`,
    );
    await worker.start();
    await this.#turnEnd(5, RECOVERY_MS);

    say('6. close: the workflow completes; the log stays');
    await sessions.close(id, 'demo finished');
    await withTimeout(client.workflow.getHandle(sessionWorkflowId(id)).result(), WAIT_MS, 'the session to close');
    this.#openSession = null;
    await worker.stop();

    const events = await store.read(id);
    say(`\n${narrateDemo(events)}\n`);
    const report = await auditSession({ store, sessionId: id, client });
    await writeOut(renderAuditReport(report));
    if (report.summary.cache.differing.length > 0) {
      await writeOut(
        `note: cache reads differ at ${report.summary.cache.differing.join(', ')}: the provider had already cached the ` +
          'request of the attempt the crash cut off, so the retry read more from cache than one clean send would.\n',
      );
    }
    const forkAt = demoForkPoint(events);
    const hints: [string, string][] = [
      [`npx dh log ${id}`, 'the log, one line per event'],
      [`npx dh show ${id}`, 'usage, cache-read share, turns'],
      [`npx dh show ${id} --step 3.2`, 'the exact request after the inject and the steer'],
      [`npx dh replay ${id}`, 'every request re-derived offline, digest-checked'],
      [`npx dh audit ${id}`, 'this report again'],
      ...(forkAt !== null
        ? [[`npx dh fork ${id} --at ${forkAt}`, 'a new session branching after turn 2'] as [string, string]]
        : []),
      [`dh resume ${id}`, 'a new run of the closed session (on your configured provider)'],
      [`npx dh export ${id} --out ${id}.jsonl`, 'the log as JSONL'],
    ];
    const width = Math.max(...hints.map(([command]) => command.length));
    await writeOut(
      [
        '',
        `session: ${id}`,
        'next, try:',
        ...hints.map(([command, why]) => `  ${command.padEnd(width)}  # ${why}`),
        '',
      ].join('\n'),
    );
    return report.ok;
  }

  /** Idempotent: a signal may arrive while the normal cleanup runs; both wait for the same one. */
  cleanup(): Promise<void> {
    this.#cleaning ??= (async () => {
      await this.#openSession?.().catch(() => undefined);
      await this.#worker?.stop().catch(() => undefined);
      for (const cleanup of this.#cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
    })();
    return this.#cleaning;
  }

  async #bundle(): Promise<string> {
    // From the per-user bundle cache (bundled only when the workflow code changed), copied so the demo
    // workers' bundle outlives any eviction.
    const { codePath, outcome } = await writeSessionWorkflowBundle(
      join(this.config.home, 'demo', 'workflow-bundle.js'),
      { cache: this.config.workflowBundleCache !== false, log: (line) => say(`  ${line}`) },
    );
    say(
      outcome === 'hit'
        ? '  the session workflows are bundled already (cached); both demo workers load that bundle'
        : '  bundled the session workflows once for both demo workers',
    );
    return codePath;
  }

  #envFor(provider: ScriptedProvider, address: string, namespace: string, bundle: string): NodeJS.ProcessEnv {
    const { config } = this;
    const inherited = { ...process.env };
    // The scripted endpoint's profile has no thinking field: a thinking mode from the user's setup would be refused.
    delete inherited.DH_THINKING;
    return {
      ...inherited,
      DH_HOME: config.home,
      DH_STORE: config.store,
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      DH_TASK_QUEUE: this.#taskQueue,
      DH_PROVIDER: 'scripted',
      DH_BASE_URL: provider.url,
      DH_MODEL: DEMO_MODEL,
      DH_API_KEY_ENV: DEMO_KEY_ENV,
      [DEMO_KEY_ENV]: 'offline-demo-key',
      DH_WORKFLOW_BUNDLE: bundle,
      DH_APPROVAL_ASK: '',
      DH_APPROVAL_DENY: '',
      DH_HOST_ID: 'dh-demo',
    };
  }

  /** Polls the log until an event with `key` is in it; fails early if the worker died. */
  async #waitFor(key: string, timeoutMs = WAIT_MS): Promise<SessionEvent[]> {
    return this.#poll((events) => events.some((e) => e.key === key), key, timeoutMs);
  }

  async #turnEnd(turn: number, timeoutMs = WAIT_MS): Promise<void> {
    const events = await this.#waitFor(`turn/end/${turn}`, timeoutMs);
    const end = events.find((e) => e.type === 'turn/end' && e.turn === turn);
    if (end?.type === 'turn/end') {
      say(
        `   turn ${turn} ended ${end.reason}${end.error ? ` (${end.error.code}: ${end.error.message})` : ''} at seq ${end.seq}`,
      );
    }
  }

  async #poll(done: (events: SessionEvent[]) => boolean, what: string, timeoutMs: number): Promise<SessionEvent[]> {
    const store = this.#store;
    if (!store) throw new Error('the demo store is not open');
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const events = await store.read(this.#sessionId).catch(() => []);
      if (done(events)) return events;
      await this.#worker?.assertAlive();
      if (Date.now() > deadline) {
        throw new DhError(
          DEMO_FAILED,
          `timed out after ${timeoutMs / 1000} s waiting for ${what} in session ${this.#sessionId}; worker log ${this.#logFile}`,
        );
      }
      await sleep(150);
    }
  }
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new DhError(DEMO_FAILED, `timed out waiting for ${what}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
