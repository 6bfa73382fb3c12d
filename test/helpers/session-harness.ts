// Scenario harness: a real scripted provider, a real SQLite store, an in-process worker on a unique
// task queue of the run's real Temporal dev server, and a client. Plus checks every scenario runs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { inject } from 'vitest';
import { buildCompactionRequest, buildRequest, type SessionEvent } from '../../src/core/index.js';
import type { PreStepDecision, ClaimedMessage, ToolDefinition } from '../../src/activities/session-runtime.js';
import { genericProfile, type ProviderProfile } from '../../src/providers/provider-profiles.js';
import { toWireBody } from '../../src/providers/wire-body.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import type { Script } from '../../src/scripted-provider/script.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { createSessionWorker, type SessionWorker } from '../../src/worker/create-session-worker.js';
import { defaultHeaderComposer } from '../../src/worker/default-header.js';
import type { Plugin } from '../../src/plugins/plugin.js';
import { createPluginRuntime } from '../../src/plugins/plugin-runtime.js';
import { systemPromptPlugin, toolsPlugin } from '../../src/plugins/basic-plugins.js';
import { sessionWorkflowId, stateQuery, type SessionStateView } from '../../src/shared/session-messages.js';
import type { SessionLimits } from '../../src/shared/session-workflow-input.js';
import { agentSession } from '../../src/workflows/session-workflow.js';

export const TEST_MODEL = 'scripted-model';
/** A second model id, for plugins that switch models mid-session. */
export const TEST_MODEL_2 = 'scripted-model-2';
export const TEST_KEY_ENV = 'DH_TEST_PROVIDER_KEY';

export interface HarnessOptions {
  readonly script: Script;
  readonly tools?: readonly ToolDefinition[];
  readonly preStep?: (batch: readonly ClaimedMessage[]) => Promise<PreStepDecision>;
  readonly idleTimeoutMs?: number;
  /** The scripted models' context window in tokens (small values make compaction happen early). */
  readonly contextWindow?: number;
  /** When given, the runtime is composed from these plugins (after a system prompt and the test tools). */
  readonly plugins?: readonly Plugin[];
  /** Another Temporal server than the run's shared one (e.g. one started with special dynamic config). */
  readonly temporal?: { readonly address: string; readonly namespace: string };
}

export interface Harness {
  readonly client: Client;
  readonly store: SqliteSessionStore;
  readonly storePath: string;
  readonly provider: ScriptedProvider;
  readonly profile: ProviderProfile;
  readonly taskQueue: string;
  readonly dir: string;
  /** Every session started through this harness (the provider is shared by them). */
  readonly sessionIds: Set<string>;
  start(sessionId: string, limits?: Partial<SessionLimits>): Promise<WorkflowHandle<typeof agentSession>>;
  stop(): Promise<void>;
}

let counter = 0;

export function scriptedProfile(baseURL: string, contextWindow = 128_000): ProviderProfile {
  return genericProfile({
    name: 'scripted',
    baseURL,
    apiKeyEnv: TEST_KEY_ENV,
    models: [
      { id: TEST_MODEL, contextWindow, vision: false, thinking: 'none' },
      { id: TEST_MODEL_2, contextWindow, vision: false, thinking: 'none' },
    ],
  });
}

export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'dh-scenario-'));
  const provider = await startScriptedProvider({ script: { models: [TEST_MODEL, TEST_MODEL_2], ...options.script } });
  const profile = scriptedProfile(provider.url, options.contextWindow);
  const storePath = join(dir, 'sessions.db');
  const store = SqliteSessionStore.open(storePath);
  const taskQueue = `scenario-${process.pid}-${++counter}-${Date.now()}`;
  const tools = new Map((options.tools ?? []).map((t) => [t.schema.name, t]));
  const address = options.temporal?.address ?? inject('temporalAddress');
  const namespace = options.temporal?.namespace ?? inject('temporalNamespace');
  const worker: SessionWorker = await createSessionWorker({
    address,
    namespace,
    taskQueue,
    workflowBundlePath: inject('workflowBundlePath'),
    runtime: {
      store,
      profile,
      apiKey: 'sk-test-not-a-real-key',
      tools,
      composeHeader: defaultHeaderComposer({
        config: { provider: profile.name, model: TEST_MODEL, includeUsage: true },
        system: 'You are a test agent.',
        tools,
      }),
      ...(options.preStep ? { preStep: options.preStep } : {}),
      ...(options.plugins
        ? createPluginRuntime({
            plugins: [
              systemPromptPlugin('You are a test agent.'),
              toolsPlugin('test-tools', [...tools.values()]),
              ...options.plugins,
            ],
            seed: { provider: profile.name, model: TEST_MODEL, includeUsage: true },
          })
        : {}),
      idleTimeoutMs: options.idleTimeoutMs ?? 5_000,
      heartbeatMs: 500,
    },
  });
  const running = worker.run();
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  const sessionIds = new Set<string>();
  return {
    sessionIds,
    client,
    store,
    storePath,
    provider,
    profile,
    taskQueue,
    dir,
    start: (sessionId, limits) => {
      sessionIds.add(sessionId);
      return client.workflow.start(agentSession, {
        workflowId: sessionWorkflowId(sessionId),
        taskQueue,
        args: [{ sessionId, ...(limits ? { limits } : {}) }],
      });
    },
    stop: async () => {
      await worker.shutdown();
      await running;
      await connection.close();
      await provider.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls the state query until `predicate` holds (or fails after `timeoutMs`). */
export async function waitForState(
  handle: WorkflowHandle,
  predicate: (state: SessionStateView) => boolean,
  timeoutMs = 20_000,
): Promise<SessionStateView> {
  const deadline = Date.now() + timeoutMs;
  let last: SessionStateView | undefined;
  while (Date.now() < deadline) {
    last = await handle.query(stateQuery);
    if (predicate(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`state never matched; last: ${JSON.stringify(last)}`);
}

/** Polls the store until the log holds `turn/end` for `turn`; returns the whole log. */
export async function waitForTurnEnd(
  store: SqliteSessionStore,
  sessionId: string,
  turn: number,
  timeoutMs = 20_000,
): Promise<SessionEvent[]> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const events = await store.read(sessionId).catch(() => []);
    if (events.some((e) => e.type === 'turn/end' && e.turn === turn)) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`turn ${turn} of ${sessionId} never ended`);
}

/**
 * The check every scenario ends with: each recorded wire digest re-derives from the log prefix before
 * it; every body the provider received is explained by a session of the harness; and per session, the bodies arrived in step
 * order (a request retried after a crash appears twice in a row, identical). Takes any provider, store
 * and profile, not only a harness's (crash tests run their workers in child processes).
 */
export async function expectProviderSawTheLog(
  harness: Pick<Harness, 'provider' | 'store' | 'profile' | 'sessionIds'>,
  sessionIds: readonly string[],
): Promise<void> {
  const received = harness.provider
    .requests()
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => r.body);
  const explained = new Set<string>();
  for (const sessionId of harness.sessionIds) {
    const events = await harness.store.read(sessionId).catch(() => []);
    for (const body of await derivedBodies(sessionId, events, harness.profile)) explained.add(body);
  }
  for (const sessionId of sessionIds) {
    const events = await harness.store.read(sessionId);
    const derived = await derivedBodies(sessionId, events, harness.profile);
    const mine = new Set(derived);
    const arrived = received.filter((body) => mine.has(body)).filter((body, i, all) => i === 0 || body !== all[i - 1]);
    if (JSON.stringify(arrived) !== JSON.stringify(derived)) {
      throw new Error(
        `${sessionId}: the provider received ${arrived.length} distinct bodies in order, the log derives ${derived.length}`,
      );
    }
  }
  const unexplained = received.filter((body) => !explained.has(body));
  if (unexplained.length > 0) throw new Error(`the provider received ${unexplained.length} bodies no log explains`);
}

/**
 * Every wire body the log explains, in log order: each step's request (checked against its
 * request/sent digest) and each compaction's summary request (checked against compact/summary).
 */
export async function derivedBodies(
  sessionId: string,
  events: readonly SessionEvent[],
  profile: ProviderProfile,
): Promise<string[]> {
  const bodies: string[] = [];
  for (const event of events) {
    if (event.type === 'request/sent') {
      const wire = await toWireBody(buildRequest(sessionId, events.slice(0, event.seq)), profile);
      if (wire.digest !== event.digest)
        throw new Error(`${sessionId} step ${event.turn}.${event.step}: the recorded digest does not re-derive`);
      bodies.push(wire.body);
    } else if (event.type === 'compact/summary') {
      const wire = await toWireBody(
        buildCompactionRequest(sessionId, events.slice(0, event.seq), event.maxTokens),
        profile,
      );
      if (wire.digest !== event.requestDigest)
        throw new Error(`${sessionId} compaction ${event.compactionId}: the recorded digest does not re-derive`);
      bodies.push(wire.body);
    }
  }
  return bodies;
}

export function eventTypes(events: readonly SessionEvent[]): string[] {
  return events.map((e) => e.type);
}
