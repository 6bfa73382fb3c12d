// startTestHarness: the local stack's pieces inside a test — a Temporal server (a dev server of its own unless
// one is named), the scripted provider playing an inline script, a worker serving the test's agents on a task
// queue of its own with a temporary home and SQLite store — and a SessionClient, the log, and the audit.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import type { Agent } from '../agents/define-agent.js';
import { auditSession, type AuditReport } from '../audit/audit-session.js';
import { SessionClient } from '../client/session-client.js';
import { temporalTlsFromEnv } from '../config/temporal-tls.js';
import { DhError, ErrorCode } from '../core/errors.js';
import type { SessionEvent } from '../core/events.js';
import { loadScript, type Script } from '../scripted-provider/script.js';
import { openSessionStore } from '../stores/open-session-store.js';
import type { SessionStore } from '../stores/session-store.js';
import { servedModels, startTestProvider, TEST_MODEL, type TestProvider } from './test-provider.js';
import { startTestTemporal, type TestTemporalOptions } from './test-temporal.js';
import { startChildWorker, startInProcessWorker, TestHarnessErrorCode, type TestWorker } from './test-worker.js';
import { workerEnv } from './worker-env.js';

export interface TestHarnessOptions {
  /**
   * The agents the worker serves (in-process), or, with `worker.module`, the agents that module exports (the
   * provider serves their models either way).
   */
  readonly agents?: readonly Agent[];
  /** The provider's script: inline, in the format of a script file, or the path of a `.yaml` / `.json` one. */
  readonly script: Script | string;
  /**
   * Run the worker as a child process, `dh worker --agents <module>`, so a test can `kill()` it as a crash
   * would. `module`: a TypeScript or JavaScript file that exports the agents (a path, or a `file:` URL).
   */
  readonly worker?: { readonly module: string | URL };
  /** What a session that names no agent runs (default: `default` if served, else the first agent). */
  readonly defaultAgent?: string;
  /** The worker's DH_MODEL: what an agent without a `model` runs (default `test-model`). */
  readonly model?: string;
  /** A running Temporal server (default: TEMPORAL_ADDRESS when set, else a dev server of the harness's own). */
  readonly temporal?: TestTemporalOptions;
  /** More variables for the worker's environment (yours, or DH_* settings such as DH_SUBAGENT_DEPTH). */
  readonly env?: Readonly<Record<string, string>>;
  /** Progress lines: the Temporal CLI's install, the dev server's start (default: stderr). */
  readonly log?: (line: string) => void;
  /** Keep the harness's temporary directory after `close()` (default false): its logs and store stay. */
  readonly keepDir?: boolean;
}

export interface TestHarness {
  /** Steers the harness's sessions: on its task queue, against its Temporal server. */
  readonly client: SessionClient;
  readonly temporal: { readonly address: string; readonly namespace: string; readonly client: Client };
  readonly taskQueue: string;
  readonly provider: TestProvider;
  readonly worker: TestWorker;
  /** The temporary directory: the worker's home (DH_HOME), its store and the logs. */
  readonly dir: string;
  /** A session's workspace, where its tools read and write. */
  workspace(sessionId: string): string;
  /** The session's log as the store holds it now ([] before its first event). */
  log(sessionId: string): Promise<SessionEvent[]>;
  /** Polls the log until `until` holds (default timeout 60 s); resolves with the log. */
  waitForLog(
    sessionId: string,
    until: (events: readonly SessionEvent[]) => boolean,
    options?: { readonly timeoutMs?: number },
  ): Promise<SessionEvent[]>;
  /** `dh audit` of a session: chain, re-derived requests, prefix stability, cache reads, history mirror. */
  audit(sessionId: string): Promise<AuditReport>;
  /** Stops the worker, then everything else the harness started; removes its directory unless `keepDir`. */
  close(): Promise<void>;
}

export async function startTestHarness(options: TestHarnessOptions): Promise<TestHarness> {
  const log = options.log ?? ((line: string) => void process.stderr.write(`dh-test: ${line}\n`));
  const dir = await mkdtemp(join(tmpdir(), 'dh-test-'));
  const cleanups: Array<() => Promise<unknown>> = [];
  if (options.keepDir !== true) cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const cleanup = async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => undefined);
  };
  try {
    const script = typeof options.script === 'string' ? loadScript(options.script) : options.script;
    const agents = options.agents ?? [];
    const model = options.model ?? TEST_MODEL;
    const [temporal, provider] = await Promise.all([
      startTestTemporal(options.temporal ?? {}, dir, log).then((started) => {
        cleanups.push(() => started.stop());
        return started;
      }),
      startTestProvider(script, servedModels(script, agents, model)).then((started) => {
        cleanups.push(() => started.close());
        return started;
      }),
    ]);
    const tls = temporal.external ? temporalTlsFromEnv() : undefined;
    const connection = await Connection.connect({ address: temporal.address, ...(tls !== undefined ? { tls } : {}) });
    cleanups.push(() => connection.close());
    const client = new Client({ connection, namespace: temporal.namespace });
    const id = randomBytes(4).toString('hex');
    const taskQueue = `dh-test-${id}`;
    const home = join(dir, 'home');
    await mkdir(home, { recursive: true });
    const storePath = join(home, 'sessions.db');
    const env = workerEnv({
      home,
      store: storePath,
      temporal,
      temporalIsExternal: temporal.external,
      taskQueue,
      hostId: `dh-test-${id}`,
      providerURL: provider.url,
      model,
      ...(options.env !== undefined ? { extra: options.env } : {}),
    });
    const worker =
      options.worker !== undefined
        ? await startChildWorker(modulePath(options.worker.module), env, dir, options.defaultAgent)
        : await startInProcessWorker(agents, env, options.defaultAgent);
    cleanups.push(() => worker.stop());

    let store: SessionStore | null = null;
    const openStore = async () => {
      if (store === null) {
        store = await openSessionStore(storePath);
        const opened = store;
        // Closed before the worker stops (cleanups run last first): reads end before its writes do.
        cleanups.push(() => opened.close());
      }
      return store;
    };
    const readLog = async (sessionId: string): Promise<SessionEvent[]> => {
      const opened = await openStore();
      try {
        return [...(await opened.read(sessionId))];
      } catch (error) {
        // Before its first event a session has no log yet.
        if (error instanceof DhError && error.code === ErrorCode.SessionNotFound) return [];
        throw error;
      }
    };
    return {
      client: new SessionClient(client, { taskQueue }),
      temporal: { address: temporal.address, namespace: temporal.namespace, client },
      taskQueue,
      provider,
      worker,
      dir,
      workspace: (sessionId) => join(home, 'workspaces', sessionId),
      log: readLog,
      waitForLog: async (sessionId, until, waitOptions = {}) => {
        const timeoutMs = waitOptions.timeoutMs ?? 60_000;
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const events = await readLog(sessionId);
          if (until(events)) return events;
          if (Date.now() > deadline) {
            throw new DhError(
              TestHarnessErrorCode.Timeout,
              `waitForLog: session ${sessionId} did not get there within ${timeoutMs} ms (${events.length} events` +
                `${events.length > 0 ? `, the last ${events[events.length - 1]?.key}` : ''})`,
              { sessionId },
            );
          }
          await new Promise((done) => setTimeout(done, 100));
        }
      },
      audit: async (sessionId) => auditSession({ store: await openStore(), sessionId, client }),
      close: cleanup,
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

function modulePath(module: string | URL): string {
  if (module instanceof URL || module.startsWith('file:')) return fileURLToPath(module);
  return isAbsolute(module) ? module : resolve(module);
}
