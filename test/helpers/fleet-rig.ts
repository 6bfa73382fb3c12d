// What the fleet tests start around their worker processes: a scripted provider that enforces a quota, the
// PostgreSQL store (so the limiter's clocks are shared tables), a Temporal client and the workers' config on a
// task queue of its own. Everything is torn down, last started first, when the test finishes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { inject, onTestFinished } from 'vitest';
import { startScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { PostgresSessionStore } from '../../src/stores/postgres-session-store.js';
import type { WorkerProcessConfig } from './child-worker.js';

type ProviderOptions = Parameters<typeof startScriptedProvider>[0];

export interface FleetRigOptions {
  /** Prefix of the temp directory and the task queue. */
  readonly name: string;
  readonly script: ProviderOptions['script'];
  readonly quota: NonNullable<ProviderOptions['quota']>;
  readonly fleetQuota: NonNullable<WorkerProcessConfig['fleetQuota']>;
  readonly idleTimeoutMs: number;
}

export interface FleetRig {
  readonly provider: Awaited<ReturnType<typeof startScriptedProvider>>;
  readonly store: PostgresSessionStore;
  readonly client: Client;
  /** The task queue, also the prefix of the test's session ids. */
  readonly run: string;
  readonly config: WorkerProcessConfig;
  /** Run after the test, in reverse order; the rig's own are first in it. */
  readonly cleanups: Array<() => Promise<unknown>>;
}

export async function startFleetRig(options: FleetRigOptions): Promise<FleetRig> {
  const cleanups: Array<() => Promise<unknown>> = [];
  onTestFinished(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  });
  const dir = mkdtempSync(join(tmpdir(), `dh-${options.name}-`));
  cleanups.push(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
  const provider = await startScriptedProvider({ script: options.script, quota: options.quota });
  cleanups.push(() => provider.close());
  const store = await PostgresSessionStore.open(inject('postgresUrl'), { poolSize: 4 });
  cleanups.push(() => store.close());
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  cleanups.push(() => connection.close());
  const client = new Client({ connection, namespace: inject('temporalNamespace') });
  const run = `${options.name}-${Date.now().toString(36)}`;
  const config: WorkerProcessConfig = {
    address: inject('temporalAddress'),
    namespace: inject('temporalNamespace'),
    taskQueue: run,
    workflowBundlePath: inject('workflowBundlePath'),
    storePath: join(dir, 'sessions.db'),
    storeUrl: inject('postgresUrl'),
    providerBaseURL: provider.url,
    runLog: join(dir, 'tool-runs.log'),
    idleTimeoutMs: options.idleTimeoutMs,
    fleetQuota: options.fleetQuota,
    // Every waiting step waits in the limiter (in its fair order), not in Temporal's task queue, whose
    // partitions hand out tasks in no fixed order: `dh worker` raises its default the same way.
    modelConcurrency: 64,
  };
  return { provider, store, client, run, config, cleanups };
}
