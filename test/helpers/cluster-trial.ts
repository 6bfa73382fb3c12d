// One failure scenario's pieces on a shared test cluster: its own scripted provider, task queue, run log
// and fleet of host workers, the messages it had acknowledged per session, and the checks every session
// ends with (check-trial.ts: nothing lost, twice or dangling, the gate, the history mirror, the audit).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { SessionClient } from '../../src/client/session-client.js';
import type { SessionEvent } from '../../src/core/index.js';
import type { ProviderProfile } from '../../src/providers/provider-profiles.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import type { Script } from '../../src/scripted-provider/script.js';
import type { SessionStore } from '../../src/stores/session-store.js';
import { sendThroughClient, sleep, type AckedMessage, type ChaosMessage } from './chaos/chaos-messages.js';
import { checkTrial, type TrialCounts } from './chaos/check-trial.js';
import { createFleet, type Fleet } from './cluster-fleet.js';
import { expectProviderSawTheLog, scriptedProfile } from './session-harness.js';

export interface ClusterTrialOptions {
  /** Names the task queue (`cluster-fail-<name>`) and prefixes the session ids. */
  readonly name: string;
  readonly script: Script;
  readonly address: string;
  readonly namespace: string;
  readonly storeUrl: string;
  readonly workflowBundlePath: string;
  readonly dir: string;
  readonly client: Client;
  readonly store: SessionStore;
}

export interface ClusterTrial {
  readonly provider: ScriptedProvider;
  readonly profile: ProviderProfile;
  readonly fleet: Fleet;
  readonly sessions: SessionClient;
  readonly taskQueue: string;
  /** `<name>-<run>-<id>`: the session of a script tag `[<id>]`. */
  sessionId(id: string): string;
  /** Sends `message` until acknowledged, and remembers it as accepted by the session. */
  send(sessionId: string, message: ChaosMessage, start?: boolean): Promise<AckedMessage>;
  acked(sessionId: string): readonly AckedMessage[];
  /** Call ids, one line per run of a tool that logs its runs (sleep, nap). */
  toolRuns(): string[];
  close(): Promise<void>;
}

export async function startClusterTrial(options: ClusterTrialOptions): Promise<ClusterTrial> {
  const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  const taskQueue = `cluster-fail-${options.name}`;
  const runLog = join(options.dir, `${options.name}-tool-runs.log`);
  writeFileSync(runLog, '');
  const provider = await startScriptedProvider({ script: options.script });
  const fleet = createFleet({
    address: options.address,
    namespace: options.namespace,
    taskQueue,
    workflowBundlePath: options.workflowBundlePath,
    // Required by the config, unused: the store is PostgreSQL at storeUrl.
    storePath: join(options.dir, 'unused.db'),
    providerBaseURL: provider.url,
    runLog,
    idleTimeoutMs: 10_000,
    storeUrl: options.storeUrl,
  });
  const sessions = new SessionClient(options.client, { taskQueue });
  const acked = new Map<string, AckedMessage[]>();
  return {
    provider,
    profile: scriptedProfile(provider.url),
    fleet,
    sessions,
    taskQueue,
    sessionId: (id) => `${options.name}-${run}-${id}`,
    send: async (sessionId, message, start = false) => {
      const ack = await sendThroughClient(sessions, sessionId, message, { start, via: 'test' });
      acked.set(sessionId, [...(acked.get(sessionId) ?? []), ack]);
      return ack;
    },
    acked: (sessionId) => acked.get(sessionId) ?? [],
    toolRuns: () => readFileSync(runLog, 'utf8').split('\n').filter(Boolean),
    close: async () => {
      await fleet.stopAll();
      await provider.close();
    },
  };
}

/** Every accepted message claimed and every turn started also ended: the session has nothing left to do. */
export function settled(events: readonly SessionEvent[], acked: readonly AckedMessage[]): boolean {
  const claimed = new Set(events.flatMap((e) => (e.type === 'inbox/claim' ? e.messageIds : [])));
  const started = events.filter((e) => e.type === 'turn/start').length;
  const ended = events.filter((e) => e.type === 'turn/end').length;
  return acked.every((m) => claimed.has(m.messageId)) && started > 0 && started === ended;
}

/** Polls `read` until `done` holds for it; a timeout names `what`. */
export async function until<T>(
  what: string,
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(200);
  }
}

/** Waits until every session has settled; returns their logs. */
export async function untilAllSettled(
  trial: ClusterTrial,
  store: SessionStore,
  sessionIds: readonly string[],
  timeoutMs: number,
): Promise<Map<string, SessionEvent[]>> {
  const logs = new Map<string, SessionEvent[]>();
  const deadline = Date.now() + timeoutMs;
  for (const id of sessionIds) {
    const events = await until(
      `${id} to settle`,
      () => store.read(id).catch(() => [] as SessionEvent[]),
      (events) => settled(events, trial.acked(id)),
      Math.max(1_000, deadline - Date.now()),
    );
    logs.set(id, events);
  }
  return logs;
}

export interface SessionCheck {
  readonly sessionId: string;
  readonly counts: TrialCounts;
  readonly problems: readonly string[];
  readonly turnErrors: number;
  readonly audited: boolean;
}

/**
 * The full check of every session (`tag(id)` is the script tag its requests carry, which picks its bodies
 * out of the provider's), and that the provider saw exactly what the logs derive, in order.
 */
export async function checkSessions(
  trial: ClusterTrial,
  store: SessionStore,
  client: Client,
  sessionIds: readonly string[],
  tag: (sessionId: string) => string,
): Promise<SessionCheck[]> {
  const bodies = trial.provider
    .requests()
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => r.body);
  const runs = trial.toolRuns();
  const checks: SessionCheck[] = [];
  for (const sessionId of sessionIds) {
    const mine = tag(sessionId);
    const check = await checkTrial({
      sessionId,
      events: await store.read(sessionId),
      acked: trial.acked(sessionId),
      providerBodies: bodies.filter((body) => body.includes(`[${mine}]`)),
      toolRuns: runs.filter((callId) => callId.startsWith(`${mine}-`)),
      idempotentCall: (callId) => callId.includes('-nap'),
      profile: trial.profile,
      store,
      client,
    });
    checks.push({ sessionId, ...check });
  }
  await expectProviderSawTheLog(
    { provider: trial.provider, store, profile: trial.profile, sessionIds: new Set(sessionIds) },
    sessionIds,
  );
  return checks;
}
