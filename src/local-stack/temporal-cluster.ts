// A production-shaped Temporal cluster for the cluster tests and benchmarks: temporal-server (not the dev
// server) with PostgreSQL persistence and SQL visibility, configured by deploy/temporal, the schemas made by
// temporal-sql-tool, the namespace and dh's search attributes registered. Restartable on the same ports.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { SESSION_SEARCH_ATTRIBUTES } from './dev-server.js';
import { createServer } from 'node:net';
import { signalGroup } from './signal-group.js';
import { registerSearchAttributes } from './stack-temporal.js';
import type { TemporalServerBinaries } from './temporal-server-binaries.js';
import { BuildStepFailed, runBuildStep } from './run-build-step.js';

/** deploy/temporal: `config/production.yaml` and `dynamicconfig/production.yaml`. */
export const DEPLOY_TEMPORAL_DIR = fileURLToPath(new URL('../../deploy/temporal/', import.meta.url));

export interface ClusterDatabase {
  /** host:port of PostgreSQL. */
  readonly address: string;
  readonly user: string;
  readonly password: string;
  /** The persistence database; visibility goes to `${database}_visibility`. */
  readonly database: string;
}

export interface StartTemporalClusterOptions {
  readonly binaries: TemporalServerBinaries;
  readonly db: ClusterDatabase;
  /** Registered at start (default `default`), with dh's search attributes. */
  readonly namespace?: string;
  /** The server's stdout and stderr are appended here. */
  readonly logFile?: string;
  /** Immutable once the cluster exists (default 4). */
  readonly numHistoryShards?: number;
  /** How long a start may take to answer (default 60 s). */
  readonly readyTimeoutMs?: number;
}

export interface TemporalCluster {
  /** host:port of the frontend. */
  readonly address: string;
  readonly namespace: string;
  /** The environment the server runs with (what docs/deploy.md lists), without the inherited one. */
  readonly env: Readonly<Record<string, string>>;
  /** The running server's pid, or null while it is down. */
  pid(): number | null;
  /** Sends `signal` to the server's process group and waits for it to exit (SIGKILL: a crash). */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the server again on the same ports and store, and waits until it answers. */
  restart(): Promise<void>;
  /** SIGTERM (SIGKILL after 10 s), then nothing is left running. */
  stop(): Promise<void>;
  /** The server's last output, for failure messages. */
  output(): string;
}

const DEFAULT_READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 10_000;
const OUTPUT_TAIL_CHARS = 6_000;
const RETENTION_MS = 3 * 24 * 3600_000;

/** Creates both databases and their schemas at the server's version (fails if they already exist). */
export async function createClusterSchemas(sqlTool: string, db: ClusterDatabase): Promise<void> {
  const [host, port] = splitAddress(db.address);
  for (const [database, schema] of [
    [db.database, 'postgresql/v12/temporal'],
    [`${db.database}_visibility`, 'postgresql/v12/visibility'],
  ] as const) {
    const base = ['--plugin', 'postgres12', '--ep', host, '-p', port, '-u', db.user, '--db', database];
    const env = { SQL_PASSWORD: db.password };
    for (const args of [
      ['create-database'],
      ['setup-schema', '-v', '0.0'],
      ['update-schema', '--schema-name', schema],
    ]) {
      try {
        await runBuildStep(sqlTool, [...base, ...args], { env, timeoutMs: 120_000 });
      } catch (error) {
        const tail = error instanceof BuildStepFailed ? `${error.how}; last output:\n${error.tail}` : String(error);
        throw new Error(`temporal-sql-tool ${[...base, ...args].join(' ')} failed: ${tail}`, { cause: error });
      }
    }
  }
}

/** The environment deploy/temporal/config/production.yaml reads, on fresh loopback ports. */
export async function clusterEnv(options: StartTemporalClusterOptions): Promise<Record<string, string>> {
  const ports = (await freeLowPorts(10)).map(String);
  const [
    frontend,
    frontendHttp,
    frontendMembership,
    history,
    historyMembership,
    matching,
    matchingMembership,
    worker,
    workerMembership,
    metrics,
  ] = ports as [string, string, string, string, string, string, string, string, string, string];
  return {
    TEMPORAL_LOG_LEVEL: 'warn',
    TEMPORAL_NUM_HISTORY_SHARDS: String(options.numHistoryShards ?? 4),
    TEMPORAL_DB: options.db.database,
    TEMPORAL_VISIBILITY_DB: `${options.db.database}_visibility`,
    TEMPORAL_DB_ADDRESS: options.db.address,
    TEMPORAL_DB_USER: options.db.user,
    TEMPORAL_DB_PASSWORD: options.db.password,
    TEMPORAL_BIND_IP: '127.0.0.1',
    TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
    TEMPORAL_FRONTEND_PORT: frontend,
    TEMPORAL_FRONTEND_HTTP_PORT: frontendHttp,
    TEMPORAL_FRONTEND_MEMBERSHIP_PORT: frontendMembership,
    TEMPORAL_HISTORY_PORT: history,
    TEMPORAL_HISTORY_MEMBERSHIP_PORT: historyMembership,
    TEMPORAL_MATCHING_PORT: matching,
    TEMPORAL_MATCHING_MEMBERSHIP_PORT: matchingMembership,
    TEMPORAL_WORKER_PORT: worker,
    TEMPORAL_WORKER_MEMBERSHIP_PORT: workerMembership,
    TEMPORAL_METRICS_ADDRESS: `127.0.0.1:${metrics}`,
    TEMPORAL_DYNAMIC_CONFIG_FILE: `${DEPLOY_TEMPORAL_DIR}dynamicconfig/production.yaml`,
  };
}

/** The server's argv after the binary: docs/deploy.md's start command (test/cluster/deploy-doc.test.ts runs that). */
export function clusterServerArgs(): string[] {
  return ['--root', DEPLOY_TEMPORAL_DIR, '--config', 'config', '--env', 'production', '--allow-no-auth', 'start'];
}

/** Starts the server on a database made by createClusterSchemas, registers the namespace, waits until ready. */
export async function startTemporalCluster(options: StartTemporalClusterOptions): Promise<TemporalCluster> {
  const env = await clusterEnv(options);
  const address = `127.0.0.1:${env.TEMPORAL_FRONTEND_PORT}`;
  const namespace = options.namespace ?? 'default';
  const readyTimeoutMs = options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
  const log: WriteStream | null =
    options.logFile !== undefined ? createWriteStream(options.logFile, { flags: 'a' }) : null;
  log?.on('error', () => undefined);
  let tail = '';
  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();
  const killOnExit = () => {
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null)
      signalGroup(child.pid, 'SIGKILL');
  };
  process.once('exit', killOnExit);

  const launch = async () => {
    const args = clusterServerArgs();
    log?.write(`\n$ ${options.binaries.server} ${args.join(' ')}\n`);
    const started = spawn(options.binaries.server, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      env: { ...process.env, ...env },
    });
    child = started;
    const keep = (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
      log?.write(chunk);
    };
    started.stdout?.on('data', keep);
    started.stderr?.on('data', keep);
    exited = new Promise<void>((resolve) => {
      started.once('exit', () => resolve());
      started.once('error', () => resolve());
    });
    await waitReady(address, namespace, readyTimeoutMs, () => {
      if (started.exitCode !== null || started.signalCode !== null) {
        throw new Error(
          `temporal-server exited before it was ready (${started.signalCode ?? `exit ${started.exitCode}`}); ` +
            `last output:\n${tail.trim()}`,
        );
      }
    }).catch((error: unknown) => {
      throw new Error(`${error instanceof Error ? error.message : String(error)}; last output:\n${tail.trim()}`, {
        cause: error,
      });
    });
  };

  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    const running = child;
    if (running?.pid === undefined || running.exitCode !== null || running.signalCode !== null) return;
    signalGroup(running.pid, signal);
    const timer = setTimeout(() => signalGroup(running.pid ?? -1, 'SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
    signalGroup(running.pid, 'SIGKILL');
  };

  const stop = async () => {
    await kill('SIGTERM');
    process.removeListener('exit', killOnExit);
    if (log !== null) await new Promise<void>((resolve) => log.end(resolve));
  };

  try {
    await launch();
    await registerNamespace(address, namespace);
    await untilNamespaceKnown(readyTimeoutMs, () => registerSearchAttributes(address, namespace));
    await waitForSearchAttributes(address, namespace, readyTimeoutMs);
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    address,
    namespace,
    env,
    pid: () => {
      const running: ChildProcess | null = child;
      return running !== null && running.exitCode === null && running.signalCode === null
        ? (running.pid ?? null)
        : null;
    },
    kill,
    restart: async () => {
      await kill('SIGKILL');
      await launch();
    },
    stop,
    output: () => tail,
  };
}

async function withConnection<T>(address: string, use: (connection: Connection) => Promise<T>): Promise<T> {
  const connection = await Connection.connect({ address, connectTimeout: 3_000 });
  try {
    return await connection.withDeadline(Date.now() + 5_000, () => use(connection));
  } finally {
    await connection.close();
  }
}

/** Ready: the frontend answers a cluster-level call (the namespace may not exist yet on a new cluster). */
async function waitReady(address: string, namespace: string, timeoutMs: number, checkAlive: () => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown = null;
  while (Date.now() < deadline) {
    checkAlive();
    try {
      await withConnection(address, (c) => c.workflowService.getSystemInfo({}));
      // A restarted server must also serve the namespace it had (the registry loads it at start).
      await withConnection(address, (c) => c.workflowService.describeNamespace({ namespace })).catch(
        (error: unknown) => {
          if (!/not found/i.test(String(error))) throw error;
        },
      );
      return;
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  throw new Error(
    `temporal-server at ${address} did not answer within ${Math.round(timeoutMs / 1000)} s (last error: ${
      lastError instanceof Error ? lastError.message : String(lastError)
    })`,
  );
}

async function registerNamespace(address: string, namespace: string): Promise<void> {
  await withConnection(address, async (c) => {
    try {
      await c.workflowService.describeNamespace({ namespace });
      return;
    } catch (error) {
      if (!/not found/i.test(String(error))) throw error;
    }
    await c.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs(RETENTION_MS),
    });
  });
}

/**
 * A namespace registered a moment ago is unknown to the services until their namespace registry refreshes
 * (up to 10 s): retry `call` while it answers NOT_FOUND.
 */
async function untilNamespaceKnown<T>(timeoutMs: number, call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (!/not found/i.test(String(error)) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/** Adding search attributes is asynchronous on SQL visibility: wait until the namespace lists them all. */
async function waitForSearchAttributes(address: string, namespace: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const wanted = Object.keys(SESSION_SEARCH_ATTRIBUTES);
  for (;;) {
    const listed = await withConnection(address, (c) => c.operatorService.listSearchAttributes({ namespace }));
    const missing = wanted.filter((name) => !(name in (listed.customAttributes ?? {})));
    if (missing.length === 0) return;
    if (Date.now() > deadline) throw new Error(`search attributes ${missing.join(', ')} were not registered in time`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function splitAddress(address: string): [string, string] {
  const colon = address.lastIndexOf(':');
  if (colon <= 0) throw new Error(`database address ${JSON.stringify(address)} is not host:port`);
  return [address.slice(0, colon), address.slice(colon + 1)];
}

/**
 * Free loopback ports below 32768: the PostgreSQL schema keeps each service's membership port in a SMALLINT
 * (a port from the kernel's ephemeral range, 32768 and up, fails the server's start with "out of range for
 * type smallint"), and ports below the ephemeral range are not handed out to outgoing connections.
 */
export async function freeLowPorts(count: number): Promise<number[]> {
  const chosen = new Set<number>();
  for (let attempt = 0; chosen.size < count; attempt++) {
    if (attempt > 200) throw new Error(`could not find ${count} free ports in 20000-32767 on 127.0.0.1`);
    const candidate = 20_000 + Math.floor(Math.random() * 12_768);
    if (!chosen.has(candidate) && (await canBind(candidate))) chosen.add(candidate);
  }
  return [...chosen];
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
