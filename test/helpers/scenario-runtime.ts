// A session-workflow runtime for scenarios outside vitest too: a scripted provider, a SQLite store in a
// temp dir, an in-process worker on one task queue of a given Temporal server, and a client. Plus the
// JSON form of workflow histories that the replay fixtures are stored in.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import type * as ProtoModule from '@temporalio/proto';
import type { SessionEvent } from '../../src/core/index.js';
import type { ClaimedMessage, PreStepDecision, ToolDefinition } from '../../src/plugins/contracts.js';
import type { SessionRuntime } from '../../src/activities/session-runtime.js';
import { genericProfile, type ProviderProfile } from '../../src/providers/provider-profiles.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import type { Script } from '../../src/scripted-provider/script.js';
import type { SessionStore } from '../../src/stores/session-store.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { AttachmentStore } from '../../src/stores/attachment-store.js';
import { createSessionWorker } from '../../src/worker/create-session-worker.js';
import type { Telemetry } from '../../src/observability/telemetry.js';
import { defaultHeaderComposer } from '../../src/worker/default-header.js';
import type { Plugin } from '../../src/plugins/plugin.js';
import type { PolicyEngine } from '../../src/policy/policy-engine.js';
import { createPluginRuntime } from '../../src/plugins/plugin-runtime.js';
import { systemPromptPlugin, toolsPlugin } from '../../src/plugins/basic-plugins.js';
import { buildCompactionRequest, buildRequest } from '../../src/core/index.js';
import { toWireBody, type ReadAttachment } from '../../src/providers/wire-body.js';
import { sessionWorkflowId, stateQuery, type SessionStateView } from '../../src/shared/session-messages.js';
import type { SessionLimits } from '../../src/shared/session-workflow-input.js';
import { agentSession } from '../../src/workflows/session-workflow.js';

export const SCENARIO_MODEL = 'scripted-model';
/** A second model id, for plugins that switch models mid-session. */
export const SCENARIO_MODEL_2 = 'scripted-model-2';
export const SCENARIO_KEY_ENV = 'DH_TEST_PROVIDER_KEY';

export interface ScenarioRuntimeOptions {
  /** host:port of the Temporal frontend. */
  readonly address: string;
  readonly namespace: string;
  /** A prebuilt bundle (bundleSessionWorkflows); bundled from source when absent. */
  readonly workflowBundlePath?: string;
  /** Default: a unique name per runtime. */
  readonly taskQueue?: string;
  /** The client's identity (recorded in signal and update events); default the SDK's pid@host. */
  readonly clientIdentity?: string;
  readonly script: Script;
  readonly tools?: readonly ToolDefinition[];
  readonly preStep?: (batch: readonly ClaimedMessage[]) => Promise<PreStepDecision>;
  readonly idleTimeoutMs?: number;
  /** The scripted models' context window in tokens (small values make compaction happen early). */
  readonly contextWindow?: number;
  /** Whether the scripted models take images (default: text-only). */
  readonly vision?: boolean;
  /** Fleet controls of the worker's runtime: prices, the session cost cap, a limiter and its tenant. */
  readonly fleet?: Partial<Pick<SessionRuntime, 'pricing' | 'sessionCostCapUsd' | 'limiter' | 'tenant'>>;
  /** The tool policy the worker judges every call by (its verdicts are logged). */
  readonly policy?: PolicyEngine;
  /** When given, the runtime is composed from these plugins (after a system prompt and the test tools). */
  readonly plugins?: readonly Plugin[];
  /** The API key the worker sends to the provider (default: a fixed fake key). */
  readonly apiKey?: string;
  /** Handed to the worker and the client alike (e.g. a payload codec). */
  readonly dataConverter?: DataConverter;
  /** The worker's own converter when it differs from the client's (e.g. a codec that marks what it cannot open). */
  readonly workerDataConverter?: DataConverter;
  /** OpenTelemetry for the worker (its plugin joins the plugin list). */
  readonly telemetry?: Telemetry;
  /** The worker's host id (default: the machine's hostname). */
  readonly hostId?: string;
}

export interface ScenarioRuntime {
  readonly client: Client;
  readonly store: SqliteSessionStore;
  readonly storePath: string;
  readonly provider: ScriptedProvider;
  readonly profile: ProviderProfile;
  /** The worker's attachment store (in `dir`): images messages cite are read from here. */
  readonly attachments: AttachmentStore;
  readonly taskQueue: string;
  readonly dir: string;
  /** Every session started through `start` (the provider is shared by them). */
  readonly sessionIds: Set<string>;
  start(sessionId: string, limits?: Partial<SessionLimits>): Promise<WorkflowHandle<typeof agentSession>>;
  /**
   * Stops the worker (it drains) and starts another on the same queue and store, on host `hostId`;
   * `whileStopped` runs in between (what it starts or signals reaches the new worker in one first task).
   */
  replaceWorker(hostId: string, whileStopped?: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

let counter = 0;

export function scriptedProfile(baseURL: string, contextWindow = 128_000, vision = false): ProviderProfile {
  return genericProfile({
    name: 'scripted',
    baseURL,
    apiKeyEnv: SCENARIO_KEY_ENV,
    models: [
      { id: SCENARIO_MODEL, contextWindow, vision, thinking: 'none' },
      { id: SCENARIO_MODEL_2, contextWindow, vision, thinking: 'none' },
    ],
  });
}

export async function startScenarioRuntime(options: ScenarioRuntimeOptions): Promise<ScenarioRuntime> {
  const dir = mkdtempSync(join(tmpdir(), 'dh-scenario-'));
  const cleanups: Array<() => Promise<void>> = [
    () => {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    },
  ];
  const stop = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  };
  try {
    const provider = await startScriptedProvider({
      script: { models: [SCENARIO_MODEL, SCENARIO_MODEL_2], ...options.script },
    });
    cleanups.push(() => provider.close());
    const profile = scriptedProfile(provider.url, options.contextWindow, options.vision);
    const attachments = new AttachmentStore(join(dir, 'attachments'));
    const storePath = join(dir, 'sessions.db');
    const store = SqliteSessionStore.open(storePath);
    cleanups.push(() => store.close());
    const taskQueue = options.taskQueue ?? `scenario-${process.pid}-${++counter}-${Date.now()}`;
    const tools = new Map((options.tools ?? []).map((t) => [t.schema.name, t]));
    const plugins = options.telemetry ? [...(options.plugins ?? []), options.telemetry.plugin] : options.plugins;
    const workerConverter = options.workerDataConverter ?? options.dataConverter;
    const startWorker = (hostId: string | undefined) =>
      createSessionWorker({
        address: options.address,
        namespace: options.namespace,
        taskQueue,
        ...(options.workflowBundlePath !== undefined ? { workflowBundlePath: options.workflowBundlePath } : {}),
        ...(workerConverter !== undefined ? { dataConverter: workerConverter } : {}),
        ...(options.telemetry !== undefined ? { telemetry: options.telemetry } : {}),
        runtime: {
          store,
          profile,
          readAttachment: (ref) => attachments.get(ref),
          apiKey: options.apiKey ?? 'sk-test-not-a-real-key',
          tools,
          composeHeader: defaultHeaderComposer({
            config: { provider: profile.name, model: SCENARIO_MODEL, includeUsage: true },
            system: 'You are a test agent.',
            tools,
          }),
          ...(options.preStep ? { preStep: options.preStep } : {}),
          ...(plugins
            ? createPluginRuntime({
                plugins: [
                  systemPromptPlugin('You are a test agent.'),
                  toolsPlugin('test-tools', [...tools.values()]),
                  ...plugins,
                ],
                seed: { provider: profile.name, model: SCENARIO_MODEL, includeUsage: true },
              })
            : {}),
          ...(options.policy !== undefined ? { policy: options.policy } : {}),
          idleTimeoutMs: options.idleTimeoutMs ?? 5_000,
          heartbeatMs: 500,
          ...options.fleet,
        },
        ...(hostId !== undefined ? { hostId } : {}),
      });
    let worker = await startWorker(options.hostId);
    let running = worker.run();
    cleanups.push(async () => {
      await worker.shutdown();
      await running;
    });
    const replaceWorker = async (hostId: string, whileStopped?: () => Promise<void>) => {
      await worker.shutdown();
      await running;
      await whileStopped?.();
      worker = await startWorker(hostId);
      running = worker.run();
    };
    const connection = await Connection.connect({ address: options.address });
    cleanups.push(() => connection.close());
    const client = new Client({
      connection,
      namespace: options.namespace,
      ...(options.clientIdentity !== undefined ? { identity: options.clientIdentity } : {}),
      ...(options.dataConverter !== undefined ? { dataConverter: options.dataConverter } : {}),
    });
    const sessionIds = new Set<string>();
    return {
      client,
      store,
      storePath,
      provider,
      profile,
      attachments,
      taskQueue,
      dir,
      sessionIds,
      replaceWorker,
      start: (sessionId, limits) => {
        sessionIds.add(sessionId);
        return client.workflow.start(agentSession, {
          workflowId: sessionWorkflowId(sessionId),
          taskQueue,
          args: [{ sessionId, ...(limits ? { limits } : {}) }],
        });
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
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

/** Polls the store until the log satisfies `predicate`; returns the whole log. */
export async function waitForLog(
  store: Pick<SessionStore, 'read'>,
  sessionId: string,
  predicate: (events: readonly SessionEvent[]) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<SessionEvent[]> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const events = await store.read(sessionId).catch(() => []);
    if (predicate(events)) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${sessionId}: ${what} never happened`);
}

/** Polls the store until the log holds `turn/end` for `turn`; returns the whole log. */
export function waitForTurnEnd(
  store: Pick<SessionStore, 'read'>,
  sessionId: string,
  turn: number,
  timeoutMs = 20_000,
): Promise<SessionEvent[]> {
  return waitForLog(
    store,
    sessionId,
    (events) => events.some((e) => e.type === 'turn/end' && e.turn === turn),
    `the end of turn ${turn}`,
    timeoutMs,
  );
}

/**
 * Every wire body the log explains, in log order: each step's request (checked against its
 * request/sent digest) and each compaction's summary request (checked against compact/summary, or
 * compact/refused when the provider refused it).
 */
export async function derivedBodies(
  sessionId: string,
  events: readonly SessionEvent[],
  profile: ProviderProfile,
  readAttachment?: ReadAttachment,
): Promise<string[]> {
  const bodies: string[] = [];
  for (const event of events) {
    if (event.type === 'request/sent') {
      const wire = await toWireBody(buildRequest(sessionId, events.slice(0, event.seq)), profile, readAttachment);
      if (wire.digest !== event.digest)
        throw new Error(`${sessionId} step ${event.turn}.${event.step}: the recorded digest does not re-derive`);
      bodies.push(wire.body);
    } else if (event.type === 'compact/summary' || event.type === 'compact/refused') {
      const wire = await toWireBody(
        buildCompactionRequest(sessionId, events.slice(0, event.seq), event.maxTokens),
        profile,
        readAttachment,
      );
      if (wire.digest !== event.requestDigest)
        throw new Error(`${sessionId} compaction ${event.compactionId}: the recorded digest does not re-derive`);
      bodies.push(wire.body);
    }
  }
  return bodies;
}

/**
 * The check every scenario ends with: each recorded wire digest re-derives from the log prefix before
 * it; every body the provider received is explained by a session of the runtime; and per session, the
 * bodies arrived in log order (a request retried after a crash appears twice in a row, identical).
 */
export async function expectProviderSawTheLog(
  runtime: Pick<ScenarioRuntime, 'provider' | 'profile' | 'sessionIds'> & {
    readonly store: Pick<SessionStore, 'read'>;
    /** Where the images the logs cite are read from (a scenario runtime's own store). */
    readonly attachments?: Pick<AttachmentStore, 'get'>;
  },
  sessionIds: readonly string[],
): Promise<void> {
  const received = runtime.provider
    .requests()
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => r.body);
  const attachments = runtime.attachments;
  const read: ReadAttachment | undefined = attachments ? (ref) => attachments.get(ref) : undefined;
  const explained = new Set<string>();
  for (const sessionId of runtime.sessionIds) {
    const events = await runtime.store.read(sessionId).catch(() => []);
    for (const body of await derivedBodies(sessionId, events, runtime.profile, read)) explained.add(body);
  }
  for (const sessionId of sessionIds) {
    const derived = await derivedBodies(sessionId, await runtime.store.read(sessionId), runtime.profile, read);
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

// ---- histories as JSON ----
//
// The fixtures use the SDK's JSON form of a History (proto3 JSON, what `historyToJSON` writes and
// `historyFromJSON` / `Worker.runReplayHistories` read). The SDK helpers check `instanceof Type` against
// @temporalio/common's copy of protobufjs, while the History type comes from @temporalio/proto's; when npm
// nests a copy per package (it does here, because @grpc/proto-loader keeps protobufjs 7 at the top), they
// throw "type must be a Type". So the same codec is loaded from the protobufjs that @temporalio/proto uses.

interface ProtoJson {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options: { ignoreUnknownFields: boolean }): History | null;
}

const requireHere = createRequire(import.meta.url);
/** @temporalio/proto's module is its (already patched) protobufjs Root, generated classes included. */
const protoRoot = requireHere('@temporalio/proto') as typeof ProtoModule & { lookupType(name: string): unknown };
const protojson = createRequire(requireHere.resolve('@temporalio/proto'))('protobufjs/ext/protojson') as ProtoJson;
const historyType = protoRoot.lookupType('temporal.api.history.v1.History');

/** A History in the SDK's JSON form, as a plain object. */
export function historyToJSONObject(history: History): unknown {
  return protojson.toJson(historyType, protoRoot.temporal.api.history.v1.History.fromObject(history));
}

/** Reads the SDK's JSON form of a History (unknown fields from newer servers are ignored, as the SDK does). */
export function historyFromJSONObject(json: unknown): History {
  const history = protojson.fromJson(historyType, json, { ignoreUnknownFields: true });
  if (history === null) throw new TypeError('not a history');
  return history;
}
