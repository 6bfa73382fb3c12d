// Runs a local Temporal dev server (`temporal server start-dev`) as a child process on free 127.0.0.1
// ports, waits until its frontend answers (while it is alive, up to a ceiling: wait-while-alive.ts), and
// stops its whole process group.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { access, constants } from 'node:fs/promises';
import { createServer } from 'node:net';
import { Connection } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import { SESSION_SEARCH_ATTRIBUTE_KEYS } from '../shared/search-attributes.js';
import { signalGroup } from './signal-group.js';
import {
  formatSeconds,
  TEMPORAL_START_TIMEOUT_ENV,
  temporalStartCeilingMs,
  waitWhileAlive,
} from './wait-while-alive.js';

export type SearchAttributeTypeName = 'Keyword' | 'Text' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList';

export interface StartDevServerOptions {
  readonly cliPath: string;
  readonly ip?: '127.0.0.1';
  /** Frontend gRPC port; 0 or undefined picks a free one. */
  readonly port?: number;
  /** Web UI port when not headless; 0 or undefined picks a free one. */
  readonly uiPort?: number;
  /** Default true: no Web UI. */
  readonly headless?: boolean;
  /** SQLite file that keeps state across restarts; default in-memory. */
  readonly dbFile?: string;
  /** Default 'default' (always created by the dev server). */
  readonly namespace?: string;
  readonly dynamicConfig?: Readonly<Record<string, string | number | boolean>>;
  readonly searchAttributes?: Readonly<Record<string, SearchAttributeTypeName>>;
  /** Append the server's stdout and stderr here (they are always kept in memory for error messages). */
  readonly logFile?: string;
  /**
   * The ceiling of the wait for the frontend to answer; while the server is alive the wait goes on up to
   * this long (default: DH_TEMPORAL_START_TIMEOUT_S, else 5 min). Its exit fails the start at once.
   */
  readonly readyTimeoutMs?: number;
  /** "still waiting…" lines every 10 s of a slow start (default: none). */
  readonly progress?: (line: string) => void;
  /** Called with the server's pid right after it is spawned (tests pause it to make a slow start). */
  readonly onSpawn?: (pid: number) => void;
}

export interface DevServer {
  /** host:port of the frontend gRPC service. */
  readonly address: string;
  readonly uiAddress: string | null;
  readonly namespace: string;
  readonly pid: number;
  /** SIGTERM to the server's process group, SIGKILL after a grace period; safe to call twice. */
  readonly stop: () => Promise<void>;
}

/** The Temporal CLI's name of each SDK search attribute type (`--search-attribute NAME=TYPE`). */
const CLI_TYPE_NAME: Readonly<Record<SearchAttributeType, SearchAttributeTypeName>> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/**
 * The search attributes the session workflow sets (src/shared/search-attributes.ts), name → CLI type.
 * Always registered: an unregistered attribute fails the workflow task that sets it.
 */
export const SESSION_SEARCH_ATTRIBUTES: Readonly<Record<string, SearchAttributeTypeName>> = Object.fromEntries(
  SESSION_SEARCH_ATTRIBUTE_KEYS.map((key) => [key.name, CLI_TYPE_NAME[key.type]]),
);

/**
 * Dynamic config the product needs: updates and async-accepted updates. Update-with-start needs nothing since
 * Server 1.32, where `frontend.enableExecuteMultiOperation` is gone (on by default, an unregistered key).
 */
export const FEATURE_DYNAMIC_CONFIG: Readonly<Record<string, boolean>> = {
  'frontend.enableUpdateWorkflowExecution': true,
  'frontend.enableUpdateWorkflowExecutionAsyncAccepted': true,
};

/**
 * The history service's transfer-queue reader polls at most 20 times a second by default (per shard and
 * per host), so once its burst is spent every task dispatch waits ~50 ms: a floor of ~200 ms under a step
 * of two activities. On a single-node dev server nothing else shares that reader, so it is unthrottled.
 * Only the settings that changed a measured figure are here; docs/temporal-server.md has the figures, the
 * readers left at their defaults, and what an operator of a real cluster should check instead.
 */
export const QUEUE_READER_DYNAMIC_CONFIG: Readonly<Record<string, number>> = {
  'history.transferProcessorMaxPollRPS': 10_000,
  'history.transferProcessorMaxPollHostRPS': 10_000,
};

/** Every dynamic config value each Temporal server the project starts gets (they win over a caller's). */
export const REQUIRED_DYNAMIC_CONFIG: Readonly<Record<string, boolean | number>> = {
  ...FEATURE_DYNAMIC_CONFIG,
  ...QUEUE_READER_DYNAMIC_CONFIG,
};

const STOP_GRACE_MS = 5_000;
const OUTPUT_TAIL_CHARS = 4_000;
/** How the CLI says the port is taken (the caller then retries on another port). */
const PORT_TAKEN = /address already in use|can't set (frontend|UI) port|port .* (is )?in use/i;
const PORT_ATTEMPTS = 3;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

export async function startDevServer(options: StartDevServerOptions): Promise<DevServer> {
  try {
    await access(options.cliPath, constants.X_OK);
  } catch {
    throw new Error(
      `cannot start the Temporal dev server: the Temporal CLI path ${JSON.stringify(options.cliPath)} is not an ` +
        'executable file (resolve it with resolveTemporalCli(), or set TEMPORAL_CLI_PATH)',
    );
  }
  // Only ports we picked ourselves may have been taken in between: retry those with new ones.
  const ownPorts = !options.port && (options.headless === false ? !options.uiPort : true);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (error) {
      if (!ownPorts || attempt >= PORT_ATTEMPTS || !(error instanceof PortTakenError)) throw error;
    }
  }
}

/** The argv after the binary, exposed so callers (and the docs) can see the exact command line. */
export function devServerArgs(
  options: StartDevServerOptions,
  ports: { port: number; uiPort: number | null },
): string[] {
  const ip = options.ip ?? '127.0.0.1';
  const namespace = options.namespace ?? 'default';
  const args = ['server', 'start-dev', '--ip', ip, '--port', String(ports.port)];
  if (ports.uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(ports.uiPort));
  if (options.dbFile !== undefined) args.push('--db-filename', options.dbFile);
  // "default" is always created; naming it again would ask the server to create it twice.
  if (namespace !== 'default') args.push('--namespace', namespace);
  const dynamicConfig = { ...options.dynamicConfig, ...REQUIRED_DYNAMIC_CONFIG };
  for (const [key, value] of Object.entries(dynamicConfig)) {
    if (!IDENTIFIER.test(key)) throw new Error(`invalid dynamic config key ${JSON.stringify(key)}`);
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw new Error(`dynamic config ${key} must be a finite number, got ${value}`);
    }
    // The CLI parses each value as JSON: strings need their quotes.
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }
  for (const [name, type] of Object.entries({ ...SESSION_SEARCH_ATTRIBUTES, ...options.searchAttributes })) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new Error(`invalid search attribute name ${JSON.stringify(name)}`);
    args.push('--search-attribute', `${name}=${type}`);
  }
  args.push('--log-level', 'warn');
  return args;
}

class PortTakenError extends Error {}

async function startOnce(options: StartDevServerOptions): Promise<DevServer> {
  const ip = options.ip ?? '127.0.0.1';
  const namespace = options.namespace ?? 'default';
  const port = options.port ? options.port : await freePort(ip);
  const uiPort = options.headless === false ? (options.uiPort ? options.uiPort : await freePort(ip)) : null;
  const args = devServerArgs(options, { port, uiPort });
  const address = `${ip}:${port}`;
  const ceilingMs = options.readyTimeoutMs ?? temporalStartCeilingMs();

  let logStream: WriteStream | null = null;
  if (options.logFile !== undefined) {
    logStream = createWriteStream(options.logFile, { flags: 'a' });
    logStream.on('error', () => undefined);
    logStream.write(`\n$ ${options.cliPath} ${args.join(' ')}\n`);
  }
  // Own process group, so stop() reaches anything the CLI starts.
  const child = spawn(options.cliPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    env: { ...process.env, NO_COLOR: '1' },
  });
  let tail = '';
  // Seen as the output arrives: a Go panic's stack trace can push the line out of the quoted tail.
  let portTaken = false;
  let outputBytes = 0;
  const keep = (chunk: Buffer) => {
    outputBytes += chunk.length;
    tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
    portTaken ||= PORT_TAKEN.test(tail);
    logStream?.write(chunk);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);

  type Exit = { code: number | null; signal: NodeJS.Signals | null };
  const state: { exit: Exit | null; spawnError: Error | null } = { exit: null, spawnError: null };
  const exited = new Promise<Exit>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => {
      state.spawnError = error;
      resolve({ code: null, signal: null });
    });
  });
  void exited.then((info) => {
    state.exit = info;
  });

  // If the host process exits without stop(), do not leave a server behind.
  const killOnExit = () => {
    if (state.exit === null) killGroup(child, 'SIGKILL');
  };
  process.once('exit', killOnExit);

  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (state.exit === null && child.pid !== undefined) {
      killGroup(child, 'SIGTERM');
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
      // Take away stragglers the CLI may have left in its group (right away, before the id can be reused).
      killGroup(child, 'SIGKILL');
    }
    if (logStream !== null) {
      const stream = logStream;
      logStream = null;
      await new Promise<void>((resolve) => stream.end(resolve));
    }
  };

  try {
    if (child.pid !== undefined) options.onSpawn?.(child.pid);
    let lastError: unknown = null;
    await waitWhileAlive({
      what: `the Temporal dev server on ${address}`,
      pid: child.pid ?? -1,
      exited: exited.then(({ code, signal }) => signal ?? `exit ${code}`),
      isReady: async () => {
        try {
          await probe(address, namespace);
          return true;
        } catch (error) {
          lastError = error;
          return false;
        }
      },
      ceilingMs,
      pollMs: 250,
      outputBytes: () => outputBytes,
      ...(options.progress ? { progress: options.progress } : {}),
      onExit: async (how) => {
        if (state.spawnError !== null) {
          return new Error(`could not run the Temporal CLI at ${options.cliPath}: ${state.spawnError.message}`);
        }
        // Let the last output arrive before quoting it.
        await new Promise((resolve) => setTimeout(resolve, 50));
        const message =
          `the Temporal dev server (${options.cliPath} ${args.join(' ')}) exited before it was ready ` +
          `(${how}); last output:\n${tail.trim()}`;
        return portTaken ? new PortTakenError(message) : new Error(message);
      },
      onCeiling: () =>
        new Error(
          `the Temporal dev server at ${address} (pid ${child.pid}) was still running but did not answer within ` +
            `${formatSeconds(ceilingMs)} s, so it was stopped` +
            (options.readyTimeoutMs === undefined ? ` (${TEMPORAL_START_TIMEOUT_ENV} sets how long)` : '') +
            ` (last error: ${lastError instanceof Error ? lastError.message : String(lastError)}); ` +
            `last output:\n${tail.trim()}`,
        ),
    });
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    address,
    uiAddress: uiPort === null ? null : `${ip}:${uiPort}`,
    namespace,
    pid: child.pid ?? -1,
    stop,
  };
}

/** Ready means: the frontend answers and the namespace is registered. */
async function probe(address: string, namespace: string): Promise<void> {
  const connection = await Connection.connect({ address, connectTimeout: 2_000 });
  try {
    await connection.withDeadline(Date.now() + 2_000, () =>
      connection.workflowService.describeNamespace({ namespace }),
    );
  } finally {
    await connection.close();
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid !== undefined) signalGroup(child.pid, signal);
}

export function freePort(ip = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, ip, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('could not find a free port'))));
    });
  });
}
