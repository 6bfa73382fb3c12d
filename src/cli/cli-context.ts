// What a `dh` command runs with: the validated configuration, the session store, a Temporal client and
// a SessionClient on the local stack (started on first use) or on TEMPORAL_ADDRESS's cluster.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { SessionClient } from '../client/session-client.js';
import { temporalTlsFromEnv } from '../config/temporal-tls.js';
import { readWorkerConfig, type WorkerConfig } from '../config/worker-config.js';
import { DhError } from '../core/index.js';
import { ensureLocalStack, isExternalTemporal, localStackStatus, type LocalStack } from '../local-stack/local-stack.js';
import { openSessionStore } from '../stores/open-session-store.js';
import type { SessionStore } from '../stores/session-store.js';
import { clientDataConverter } from '../codec/aes-gcm-codec.js';
import type { ProviderProfile } from '../providers/provider-profiles.js';

export interface CliContext {
  /** The configuration with `temporalAddress` / `namespace` of the stack actually used. */
  readonly config: WorkerConfig;
  readonly store: SessionStore;
  readonly client: Client;
  readonly sessions: SessionClient;
  readonly stack: LocalStack;
  close(): Promise<void>;
}

export const MISSING_API_KEY = 'MISSING_API_KEY';

/** Reads and validates the configuration (a bad value is one DhError line naming the variable). */
export function loadCliConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  return readWorkerConfig(env);
}

/**
 * A worker for this configuration can call its provider: the profile resolves and the key variable is
 * set. Throws a one-line DhError naming the variable (and the offline alternative) otherwise.
 */
export async function assertProviderReady(config: WorkerConfig, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  // Loaded here: the profiles import the OpenAI SDK, which commands that start no worker never need.
  const { workerProfile } = await import('../config/worker-profile.js');
  let profile: ProviderProfile;
  try {
    profile = workerProfile(config);
  } catch (error) {
    throw new DhError(
      'INVALID_CONFIG',
      `invalid configuration: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  // A generic endpoint whose key variable nobody named may need no key: the worker then sends none.
  if (profile.apiKeyOptional === true) return;
  const { apiKeyEnv } = profile;
  const key = env[apiKeyEnv];
  if (key === undefined || key.trim() === '') {
    throw new DhError(
      MISSING_API_KEY,
      `no API key for provider "${config.provider}": set ${apiKeyEnv} (or try \`dh demo\`, which runs offline)`,
      { provider: config.provider, apiKeyEnv },
    );
  }
}

export async function openCliContext(options: { startWorker?: boolean } = {}): Promise<CliContext> {
  const base = loadCliConfig();
  const startWorker = options.startWorker ?? true;
  // A worker started here needs the key (one already running has it); a remote cluster's workers hold their own.
  if (startWorker && !isExternalTemporal() && (await localStackStatus(base)).worker !== 'running') {
    await assertProviderReady(base);
  }
  const tls = temporalTlsFromEnv();
  const stack = await ensureLocalStack(base, {
    startWorker,
    log: (line) => void process.stderr.write(`dh: ${line}\n`),
  });
  const config: WorkerConfig = { ...base, temporalAddress: stack.address, namespace: stack.namespace };
  const store = await openStore(config);
  let connection: Connection;
  try {
    connection = await Connection.connect({
      address: stack.address,
      connectTimeout: 10_000,
      ...(tls !== undefined ? { tls } : {}),
    });
  } catch (error) {
    await store.close();
    throw new DhError(
      'TEMPORAL_UNREACHABLE',
      `cannot reach Temporal at ${stack.address}: ${error instanceof Error ? error.message : String(error)}`,
      { address: stack.address },
      { cause: error },
    );
  }
  const client = new Client({ connection, namespace: stack.namespace, ...clientDataConverter() });
  const sessions = new SessionClient(client, { taskQueue: stack.taskQueue });
  let closed = false;
  return {
    config,
    store,
    client,
    sessions,
    stack,
    async close() {
      if (closed) return;
      closed = true;
      await connection.close().catch(() => undefined);
      await store.close();
    },
  };
}

/** For offline commands (replay, log, export): the store only, no Temporal. */
export async function openStoreOnly(): Promise<{ config: WorkerConfig; store: SessionStore; close(): Promise<void> }> {
  const config = loadCliConfig();
  const store = await openStore(config);
  return { config, store, close: () => store.close() };
}

async function openStore(config: WorkerConfig): Promise<SessionStore> {
  if (!config.store.includes('://') && config.store !== ':memory:')
    mkdirSync(dirname(config.store), { recursive: true });
  return openSessionStore(config.store, { logKey: config.logKey });
}
