// The embedded local stack under DH_HOME: a Temporal dev server with a persistent db file and a
// background worker process, started on first use and reused afterwards (pids and ports in stack.json).
// With TEMPORAL_ADDRESS set, the configured cluster is used instead and no local process is started.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import { temporalTlsFromEnv, type TemporalTls } from '../config/temporal-tls.js';
import type { WorkerConfig } from '../config/worker-config.js';
import { DhError } from '../core/index.js';
import { devServerArgs, type SearchAttributeTypeName } from './dev-server.js';
import { signalGroup } from './signal-group.js';
import { resolveTemporalCli } from './temporal-cli.js';

export interface LocalStack {
  readonly address: string;
  readonly namespace: string;
  readonly uiAddress: string | null;
  readonly taskQueue: string;
}

export interface EnsureLocalStackOptions {
  /** Start (or reuse) the background worker too (default true). */
  readonly startWorker?: boolean;
  /** Progress lines (default: none). */
  readonly log?: (line: string) => void;
}

export interface LocalStackStatus {
  readonly temporal: 'running' | 'stopped' | 'external';
  readonly worker: 'running' | 'stopped';
  readonly address: string | null;
  readonly uiAddress: string | null;
  readonly home: string;
}

export const LocalStackErrorCode = {
  StartFailed: 'LOCAL_STACK_START_FAILED',
  PortTaken: 'LOCAL_STACK_PORT_TAKEN',
  Locked: 'LOCAL_STACK_LOCKED',
} as const;

/** The search attributes the session workflow sets; registered when the embedded server starts. */
export const DH_SEARCH_ATTRIBUTES: Readonly<Record<string, SearchAttributeTypeName>> = {
  DhSessionStatus: 'Keyword',
  DhTurns: 'Int',
  DhTotalTokens: 'Int',
};

/** The embedded server's default frontend port (the UI listens on port + 1000 unless configured). */
export const DEFAULT_TEMPORAL_PORT = 7233;
/** The env var the background worker writes its pid to once its Temporal workers are created. */
export const WORKER_READY_FILE_ENV = 'DH_WORKER_READY_FILE';

const TEMPORAL_READY_MS = 60_000;
const WORKER_READY_MS = 180_000;
const STOP_GRACE_MS = 10_000;
const LOCK_WAIT_MS = 10 * 60_000;
const BIN = fileURLToPath(new URL('../../bin/dh.mjs', import.meta.url));

interface TemporalRecord {
  readonly pid: number;
  readonly address: string;
  readonly uiAddress: string | null;
  readonly namespace: string;
  readonly dbFile: string;
  readonly cliPath: string;
  readonly startedAt: string;
}

interface WorkerRecord {
  readonly pid: number;
  readonly taskQueue: string;
  /** The worker-relevant configuration it was started with; a different one restarts it. */
  readonly fingerprint: string;
  readonly logFile: string;
  readonly startedAt: string;
}

interface StackRecord {
  temporal?: TemporalRecord;
  worker?: WorkerRecord;
}

/** True when TEMPORAL_ADDRESS names a cluster: no local processes then. */
export function isExternalTemporal(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.TEMPORAL_ADDRESS ?? '').trim() !== '';
}

/** Where the stack keeps its files. */
export function stackPaths(home: string) {
  return {
    home,
    record: join(home, 'stack.json'),
    lock: join(home, 'stack.lock'),
    dbFile: join(home, 'temporal.db'),
    logs: join(home, 'logs'),
    temporalLog: join(home, 'logs', 'temporal.log'),
    workerLog: join(home, 'logs', 'worker.log'),
    workerReady: join(home, 'worker.ready'),
  };
}

/**
 * With TEMPORAL_ADDRESS set: that cluster (no local processes). Otherwise: reuse or start the embedded
 * stack under DH_HOME (Temporal dev server with a persistent db file + a background worker process),
 * and return its addresses.
 */
export async function ensureLocalStack(
  config: WorkerConfig,
  options: EnsureLocalStackOptions = {},
): Promise<LocalStack> {
  if (isExternalTemporal()) {
    return {
      address: config.temporalAddress,
      namespace: config.namespace,
      uiAddress: process.env.TEMPORAL_UI_ADDRESS?.trim() || null,
      taskQueue: config.taskQueue,
    };
  }
  const log = options.log ?? (() => undefined);
  const paths = stackPaths(config.home);
  await mkdir(paths.logs, { recursive: true });
  const release = await acquireLock(paths.lock, log);
  try {
    const record = await readRecord(paths.record);
    const temporal = await ensureTemporal(config, record, paths, log);
    record.temporal = temporal;
    await writeRecord(paths.record, record);
    if (options.startWorker ?? true) {
      record.worker = await ensureWorker(config, temporal, record.worker, paths, log);
      await writeRecord(paths.record, record);
    }
    return {
      address: temporal.address,
      namespace: temporal.namespace,
      uiAddress: temporal.uiAddress,
      taskQueue: config.taskQueue,
    };
  } finally {
    await release();
  }
}

/** Stops the embedded stack's processes recorded under DH_HOME (worker first); the db file stays. */
export async function stopLocalStack(config: WorkerConfig): Promise<{ stopped: string[] }> {
  const paths = stackPaths(config.home);
  if (!existsSync(paths.record)) return { stopped: [] };
  const release = await acquireLock(paths.lock, () => undefined);
  try {
    const record = await readRecord(paths.record);
    const stopped: string[] = [];
    if (record.worker && isOurProcess(record.worker.pid, 'worker')) {
      await stopGroup(record.worker.pid);
      stopped.push(`worker (pid ${record.worker.pid})`);
    }
    delete record.worker;
    if (record.temporal && isOurProcess(record.temporal.pid, 'temporal')) {
      await stopGroup(record.temporal.pid);
      stopped.push(`temporal (pid ${record.temporal.pid}, ${record.temporal.address})`);
    }
    delete record.temporal;
    await writeRecord(paths.record, record);
    await rm(paths.workerReady, { force: true });
    return { stopped };
  } finally {
    await release();
  }
}

export async function localStackStatus(config: WorkerConfig): Promise<LocalStackStatus> {
  const paths = stackPaths(config.home);
  const record = existsSync(paths.record) ? await readRecord(paths.record) : {};
  const worker = record.worker && isOurProcess(record.worker.pid, 'worker') ? 'running' : 'stopped';
  if (isExternalTemporal()) {
    // No local processes: "running" means some worker polls the session task queue.
    const polled = await hasPollers(config.temporalAddress, config.namespace, config.taskQueue);
    return {
      temporal: 'external',
      worker: polled ? 'running' : 'stopped',
      address: config.temporalAddress,
      uiAddress: process.env.TEMPORAL_UI_ADDRESS?.trim() || null,
      home: config.home,
    };
  }
  const t = record.temporal;
  const running = t !== undefined && isOurProcess(t.pid, 'temporal') && (await answers(t.address, t.namespace));
  return {
    temporal: running ? 'running' : 'stopped',
    worker,
    address: running ? t.address : null,
    uiAddress: running ? t.uiAddress : null,
    home: config.home,
  };
}

// ---- Temporal dev server ----

async function ensureTemporal(
  config: WorkerConfig,
  record: StackRecord,
  paths: ReturnType<typeof stackPaths>,
  log: (line: string) => void,
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
      searchAttributes: DH_SEARCH_ATTRIBUTES,
    },
    { port, uiPort },
  );
  log(`starting the local Temporal server on ${address} (db ${paths.dbFile})`);
  const logStart = await fileSize(paths.temporalLog);
  const out = openSync(paths.temporalLog, 'a');
  const exited: { how: string | null } = { how: null };
  let pid: number | undefined;
  try {
    const child = spawn(cliPath, args, {
      detached: true,
      stdio: ['ignore', out, out],
      env: { ...process.env, NO_COLOR: '1' },
    });
    child.once('exit', (code, signal) => (exited.how = signal ?? `exit ${code}`));
    child.once('error', (error) => (exited.how = error.message));
    child.unref();
    pid = child.pid;
  } finally {
    closeSync(out);
  }
  if (pid === undefined)
    throw new DhError(LocalStackErrorCode.StartFailed, `could not run the Temporal CLI ${cliPath}`);
  const deadline = Date.now() + TEMPORAL_READY_MS;
  for (;;) {
    if (exited.how !== null) {
      const tail = await readTail(paths.temporalLog, logStart);
      const taken = /address already in use|can't set (frontend|UI) port|port .* (is )?in use/i.test(tail);
      throw new DhError(
        taken ? LocalStackErrorCode.PortTaken : LocalStackErrorCode.StartFailed,
        taken
          ? `the local Temporal server could not take port ${port} or ${uiPort ?? '-'} (in use); set DH_TEMPORAL_PORT / DH_TEMPORAL_UI_PORT, or point TEMPORAL_ADDRESS at a running server`
          : `the local Temporal server exited (${exited.how}); see ${paths.temporalLog}:\n${tail.trim()}`,
      );
    }
    if (await answers(address, config.namespace)) break;
    if (Date.now() > deadline) {
      await stopGroup(pid);
      throw new DhError(
        LocalStackErrorCode.StartFailed,
        `the local Temporal server did not answer on ${address} within ${TEMPORAL_READY_MS / 1000} s; see ${paths.temporalLog}`,
      );
    }
    await sleep(250);
  }
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
async function answers(address: string, namespace: string, timeoutMs = 2_000): Promise<boolean> {
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

/** Registers the DH_SEARCH_ATTRIBUTES a namespace lacks (idempotent). */
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
    const missing = Object.entries(DH_SEARCH_ATTRIBUTES).filter(([name]) => !known.has(name));
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
async function hasPollers(address: string, namespace: string, taskQueue: string): Promise<boolean> {
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

// ---- background worker ----

function workerFingerprint(config: WorkerConfig, temporal: TemporalRecord): string {
  return JSON.stringify({
    address: temporal.address,
    namespace: temporal.namespace,
    taskQueue: config.taskQueue,
    store: config.store,
    provider: config.provider,
    baseURL: config.baseURL ?? null,
    model: config.model,
    apiKeyEnv: config.apiKeyEnv ?? null,
    thinking: config.thinking ?? null,
    systemPrompt: config.systemPrompt,
    workflowBundlePath: config.workflowBundlePath ?? null,
    shellSandbox: config.shellSandbox,
    approvalAsk: config.approvalAsk,
    approvalDeny: config.approvalDeny,
  });
}

async function ensureWorker(
  config: WorkerConfig,
  temporal: TemporalRecord,
  previous: WorkerRecord | undefined,
  paths: ReturnType<typeof stackPaths>,
  log: (line: string) => void,
): Promise<WorkerRecord> {
  const fingerprint = workerFingerprint(config, temporal);
  if (previous && isOurProcess(previous.pid, 'worker')) {
    if (previous.fingerprint === fingerprint) return previous;
    log(`the worker configuration changed: restarting the background worker (pid ${previous.pid})`);
    await stopGroup(previous.pid);
  }
  await rm(paths.workerReady, { force: true });
  log(`starting the background worker on task queue ${config.taskQueue} (log ${paths.workerLog})`);
  const logStart = await fileSize(paths.workerLog);
  const out = openSync(paths.workerLog, 'a');
  const exited: { how: string | null } = { how: null };
  let pid: number | undefined;
  try {
    const child = spawn(process.execPath, [BIN, 'worker'], {
      detached: true,
      stdio: ['ignore', out, out],
      env: {
        ...process.env,
        DH_HOME: config.home,
        TEMPORAL_ADDRESS: temporal.address,
        TEMPORAL_NAMESPACE: temporal.namespace,
        DH_TASK_QUEUE: config.taskQueue,
        DH_STORE: config.store,
        [WORKER_READY_FILE_ENV]: paths.workerReady,
      },
    });
    child.once('exit', (code, signal) => (exited.how = signal ?? `exit ${code}`));
    child.once('error', (error) => (exited.how = error.message));
    child.unref();
    pid = child.pid;
  } finally {
    closeSync(out);
  }
  if (pid === undefined) throw new DhError(LocalStackErrorCode.StartFailed, 'could not start the background worker');
  const deadline = Date.now() + WORKER_READY_MS;
  for (;;) {
    if (exited.how !== null) {
      const tail = await readTail(paths.workerLog, logStart);
      throw new DhError(
        LocalStackErrorCode.StartFailed,
        `the background worker exited (${exited.how}) before it was ready; see ${paths.workerLog}:\n${tail.trim()}`,
      );
    }
    const ready = await readFile(paths.workerReady, 'utf8').catch(() => '');
    if (ready.trim() === String(pid)) break;
    if (Date.now() > deadline) {
      await stopGroup(pid);
      throw new DhError(
        LocalStackErrorCode.StartFailed,
        `the background worker was not ready within ${WORKER_READY_MS / 1000} s; see ${paths.workerLog}`,
      );
    }
    await sleep(200);
  }
  return {
    pid,
    taskQueue: config.taskQueue,
    fingerprint,
    logFile: paths.workerLog,
    startedAt: new Date().toISOString(),
  };
}

// ---- processes ----

/**
 * The pid is alive and is what we started (on Linux its command line is checked, so a recycled pid or
 * an exited-but-unreaped child does not count).
 */
function isOurProcess(pid: number, kind: 'temporal' | 'worker'): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const procFile = `/proc/${pid}/cmdline`;
  if (!existsSync('/proc/self/cmdline')) return true;
  try {
    const cmdline = readFileSync(procFile, 'utf8').split('\0');
    return kind === 'temporal'
      ? cmdline.includes('start-dev')
      : cmdline.some((a) => a.endsWith('dh.mjs')) && cmdline.includes('worker');
  } catch {
    return false;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A zombie (exited, not yet reaped by its parent) has an empty command line.
  try {
    return !existsSync('/proc/self/cmdline') || readFileSync(`/proc/${pid}/cmdline`).length > 0;
  } catch {
    return false;
  }
}

/** SIGTERM to the process group, SIGKILL after a grace period. */
async function stopGroup(pid: number): Promise<void> {
  signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + STOP_GRACE_MS;
  while (alive(pid) && Date.now() < deadline) await sleep(100);
  signalGroup(pid, 'SIGKILL');
  const hard = Date.now() + 2_000;
  while (alive(pid) && Date.now() < hard) await sleep(50);
}

// ---- files ----

async function readRecord(path: string): Promise<StackRecord> {
  try {
    const parsed: unknown = JSON.parse(await readFile(path, 'utf8'));
    return typeof parsed === 'object' && parsed !== null ? parsed : {};
  } catch {
    return {};
  }
}

async function writeRecord(path: string, record: StackRecord): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`);
  await rename(tmp, path);
}

/** An exclusive `mkdir` lock around starting and stopping; a lock whose owner died is taken over. */
async function acquireLock(dir: string, log: (line: string) => void): Promise<() => Promise<void>> {
  const owner = join(dir, 'pid');
  const deadline = Date.now() + LOCK_WAIT_MS;
  let announced = false;
  for (;;) {
    try {
      await mkdir(dir);
      await writeFile(owner, String(process.pid));
      return () => rm(dir, { recursive: true, force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number(await readFile(owner, 'utf8').catch(() => 'NaN'));
    const age = await stat(dir).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if ((Number.isInteger(holder) && !alive(holder)) || (!Number.isInteger(holder) && age > 10_000)) {
      await rm(dir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new DhError(LocalStackErrorCode.Locked, `the local stack lock ${dir} is held by pid ${holder}`);
    }
    if (!announced) {
      log(`waiting for another dh process (pid ${holder}) that is starting or stopping the local stack`);
      announced = true;
    }
    await sleep(200);
  }
}

async function fileSize(path: string): Promise<number> {
  return stat(path).then(
    (s) => s.size,
    () => 0,
  );
}

async function readTail(path: string, from: number): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.slice(from).slice(-3_000);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
