// The local stack's Temporal process: a dev server with a persistent db file on a configured port, started
// detached (waited for while it is alive, up to DH_TEMPORAL_START_TIMEOUT_S) or reused while it answers;
// plus the probes the stack asks a Temporal frontend (does it answer, does a worker poll) and the
// registration of the session search attributes.
import { Connection } from '@temporalio/client';
import { temporalTlsFromEnv, type TemporalTls } from '../config/temporal-tls.js';
import type { WorkerConfig } from '../config/worker-config.js';
import { DhError } from '../core/index.js';
import { devServerArgs, SESSION_SEARCH_ATTRIBUTES, type SearchAttributeTypeName } from './dev-server.js';
import { LocalStackErrorCode } from './local-stack-error.js';
import { readLogTail, spawnDetached, waitUntilReady } from './spawn-detached.js';
import { isOurProcess, stopGroup } from './stack-processes.js';
import type { StackPaths, StackRecord, TemporalRecord } from './stack-record.js';
import { resolveTemporalCli } from './temporal-cli.js';
import { formatSeconds, TEMPORAL_START_TIMEOUT_ENV, temporalStartCeilingMs } from './wait-while-alive.js';

/** The embedded server's default frontend port (the UI listens on port + 1000 unless configured). */
export const DEFAULT_TEMPORAL_PORT = 7233;

/** The recorded dev server while it answers for the namespace, else a new one (started and waited for). */
export async function ensureTemporal(
  config: WorkerConfig,
  record: StackRecord,
  paths: StackPaths,
  log: (line: string) => void,
  onSpawn?: (pid: number) => void,
): Promise<TemporalRecord> {
  const previous = record.temporal;
  if (previous && isOurProcess(previous.pid, 'temporal')) {
    if (previous.namespace === config.namespace && (await answers(previous.address, previous.namespace))) {
      return previous;
    }
    // Alive but not answering (or serving another namespace): replace it.
    log(`restarting the local Temporal server (pid ${previous.pid})`);
    await stopGroup(previous.pid);
  }
  const { port, uiPort } = configuredPorts();
  const ceilingMs = temporalStartCeilingMs();
  const address = `127.0.0.1:${port}`;
  if (await answers(address, config.namespace, 1_000)) {
    throw new DhError(
      LocalStackErrorCode.PortTaken,
      `port ${port} already serves a Temporal frontend that dh did not start; use it with ` +
        `TEMPORAL_ADDRESS=${address}, or set DH_TEMPORAL_PORT to another port for the embedded stack`,
      { port },
    );
  }
  const cliPath = await resolveTemporalCli({ log });
  const args = devServerArgs(
    {
      cliPath,
      port,
      ...(uiPort === null ? { headless: true } : { headless: false, uiPort }),
      dbFile: paths.dbFile,
      namespace: config.namespace,
    },
    { port, uiPort },
  );
  log(`starting the local Temporal server on ${address} (db ${paths.dbFile})`);
  const child = await spawnDetached(cliPath, args, {
    env: { ...process.env, NO_COLOR: '1' },
    logFile: paths.temporalLog,
  });
  if (child === undefined)
    throw new DhError(LocalStackErrorCode.StartFailed, `could not run the Temporal CLI ${cliPath}`);
  const pid = child.pid;
  onSpawn?.(pid);
  await waitUntilReady(child, {
    isReady: () => answers(address, config.namespace),
    timeoutMs: ceilingMs,
    pollMs: 250,
    progress: { what: `the local Temporal server on ${address}`, log },
    onExit: async (how) => {
      const tail = await readLogTail(paths.temporalLog, child.logStart);
      const taken = /address already in use|can't set (frontend|UI) port|port .* (is )?in use/i.test(tail);
      return new DhError(
        taken ? LocalStackErrorCode.PortTaken : LocalStackErrorCode.StartFailed,
        taken
          ? `the local Temporal server could not take port ${port} or ${uiPort ?? '-'} (in use); set DH_TEMPORAL_PORT / DH_TEMPORAL_UI_PORT, or point TEMPORAL_ADDRESS at a running server`
          : `the local Temporal server exited (${how}); see ${paths.temporalLog}:\n${tail.trim()}`,
      );
    },
    onTimeout: async () => {
      await stopGroup(pid);
      const tail = (await readLogTail(paths.temporalLog, child.logStart)).trim();
      return new DhError(
        LocalStackErrorCode.StartFailed,
        `the local Temporal server (pid ${pid}) was still running but did not answer on ${address} within ` +
          `${formatSeconds(ceilingMs)} s, so it was stopped; set ${TEMPORAL_START_TIMEOUT_ENV} to wait longer ` +
          `(seconds); see ${paths.temporalLog}` +
          (tail === '' ? ' (no output)' : `:\n${tail}`),
        { variable: TEMPORAL_START_TIMEOUT_ENV, ceilingMs },
      );
    },
  });
  // `--search-attribute` registers only into a fresh db file; an older file gets the missing ones here.
  await registerSearchAttributes(address, config.namespace);
  return {
    pid,
    address,
    uiAddress: uiPort === null ? null : `127.0.0.1:${uiPort}`,
    namespace: config.namespace,
    dbFile: paths.dbFile,
    cliPath,
    startedAt: new Date().toISOString(),
  };
}

function configuredPorts(): { port: number; uiPort: number | null } {
  const parse = (name: string, value: string | undefined): number | undefined => {
    if (value === undefined || value.trim() === '') return undefined;
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || n > 65535)
      throw new DhError('INVALID_CONFIG', `invalid configuration: ${name}: expected a port number, got "${value}"`);
    return n;
  };
  const port = parse('DH_TEMPORAL_PORT', process.env.DH_TEMPORAL_PORT) ?? DEFAULT_TEMPORAL_PORT;
  if (port === 0) throw new DhError('INVALID_CONFIG', 'invalid configuration: DH_TEMPORAL_PORT: must not be 0');
  const ui = parse('DH_TEMPORAL_UI_PORT', process.env.DH_TEMPORAL_UI_PORT);
  // DH_TEMPORAL_UI_PORT=0 turns the Web UI off.
  return { port, uiPort: ui === 0 ? null : (ui ?? (port + 1000 <= 65535 ? port + 1000 : null)) };
}

/** The frontend answers and the namespace is registered. */
export async function answers(address: string, namespace: string, timeoutMs = 2_000): Promise<boolean> {
  let connection: Connection | null = null;
  try {
    connection = await Connection.connect({ address, connectTimeout: timeoutMs });
    const c = connection;
    await c.withDeadline(Date.now() + timeoutMs, () => c.workflowService.describeNamespace({ namespace }));
    return true;
  } catch {
    return false;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

/** Operator-service codes of the attribute types (temporal.api.enums.v1.IndexedValueType). */
const INDEXED_VALUE_TYPE: Readonly<Record<SearchAttributeTypeName, number>> = {
  Text: 1,
  Keyword: 2,
  Int: 3,
  Double: 4,
  Bool: 5,
  Datetime: 6,
  KeywordList: 7,
};

type AddSearchAttributesRequest = Parameters<Connection['operatorService']['addSearchAttributes']>[0];

/** Registers the session search attributes (SESSION_SEARCH_ATTRIBUTES) a namespace lacks (idempotent). */
export async function registerSearchAttributes(
  address: string,
  namespace: string,
  tls?: TemporalTls,
): Promise<string[]> {
  const connection = await Connection.connect({ address, ...(tls !== undefined ? { tls } : {}) });
  try {
    const existing = await connection.operatorService.listSearchAttributes({ namespace });
    const known = new Set([
      ...Object.keys(existing.customAttributes ?? {}),
      ...Object.keys(existing.systemAttributes ?? {}),
    ]);
    const missing = Object.entries(SESSION_SEARCH_ATTRIBUTES).filter(([name]) => !known.has(name));
    if (missing.length === 0) return [];
    const searchAttributes: NonNullable<AddSearchAttributesRequest['searchAttributes']> = Object.fromEntries(
      missing.map(([name, type]) => [name, INDEXED_VALUE_TYPE[type]]),
    );
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
    return missing.map(([name]) => name);
  } finally {
    await connection.close();
  }
}

/** Some worker polled the task queue's workflow tasks recently (false when the cluster cannot be asked). */
export async function hasPollers(address: string, namespace: string, taskQueue: string): Promise<boolean> {
  let connection: Connection | null = null;
  try {
    const tls = temporalTlsFromEnv();
    connection = await Connection.connect({ address, connectTimeout: 3_000, ...(tls !== undefined ? { tls } : {}) });
    const c = connection;
    const response = await c.withDeadline(Date.now() + 3_000, () =>
      c.workflowService.describeTaskQueue({ namespace, taskQueue: { name: taskQueue }, taskQueueType: 1 }),
    );
    return (response.pollers ?? []).length > 0;
  } catch {
    return false;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}
