// docs/deploy.md followed as an operator would: each of its shell blocks, exactly as written, run by bash on
// the run's PostgreSQL with only the Go binaries the page builds on PATH (databases, temporal-server, the
// namespace and search attributes by the `temporal` CLI, `npx dh worker`, `npx dh run`, `npx dh audit` from the
// checkout, with no `dh` on PATH); only its settings' values are ours.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { uncheckedMacsLimit } from '../../src/audit/audit-chain.js';
import { keyIdOf } from '../../src/codec/aes-gcm-codec.js';
import { SESSION_SEARCH_ATTRIBUTES } from '../../src/local-stack/dev-server.js';
import { signalGroup } from '../../src/local-stack/signal-group.js';
import { clusterEnv, DEPLOY_TEMPORAL_DIR } from '../../src/local-stack/temporal-cluster.js';
import { TEMPORAL_CLI_VERSION } from '../../src/local-stack/temporal-cli.js';
import { TEMPORAL_SERVER_VERSION } from '../../src/local-stack/temporal-server-binaries.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { parseLogKey } from '../../src/stores/log-key.js';
import { PostgresSessionStore } from '../../src/stores/postgres-session-store.js';
import { exportedSettings, shellBlocks, type ShellBlock } from '../helpers/doc-shell-blocks.js';
import { turnEnds } from '../helpers/log-views.js';
import { TEST_MODEL } from '../helpers/session-harness.js';
import { clusterDatabases, databaseUrl, type ClusterDatabases } from '../helpers/test-cluster.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PAGE = join(REPO_ROOT, 'docs', 'deploy.md');
/** The page's shell blocks in order: what this test does with each. */
const STEPS = [
  'server-settings',
  'dh-settings',
  'binaries',
  'databases',
  'server',
  'namespace',
  'worker-settings',
  'worker',
  'session',
] as const;
type Step = (typeof STEPS)[number];
/** The session the page's `session` block runs and audits. */
const SESSION = 'deploy-check';
const ANSWER = 'The cluster works.';
/** How long one of the page's blocks may run before the test calls it stuck. */
const BLOCK_TIMEOUT_MS = 240_000;
/**
 * Server variables the settings block leaves to the template's defaults, which the test must override:
 * ports the shared machine may have taken. Each is in the page's configuration table (checked below).
 */
const SERVER_PORT_VARIABLES = [
  'TEMPORAL_FRONTEND_PORT',
  'TEMPORAL_FRONTEND_HTTP_PORT',
  'TEMPORAL_FRONTEND_MEMBERSHIP_PORT',
  'TEMPORAL_HISTORY_PORT',
  'TEMPORAL_HISTORY_MEMBERSHIP_PORT',
  'TEMPORAL_MATCHING_PORT',
  'TEMPORAL_MATCHING_MEMBERSHIP_PORT',
  'TEMPORAL_WORKER_PORT',
  'TEMPORAL_WORKER_MEMBERSHIP_PORT',
  'TEMPORAL_METRICS_ADDRESS',
];

const page = readFileSync(PAGE, 'utf8');
/** The rows of the server's configuration table (the section that shows the start command). */
const configurationRows = (): string[] => {
  const section = page.split('\n### ').find((part) => part.startsWith('Configuration and start\n')) ?? '';
  return section.split('\n').filter((line) => line.startsWith('| `'));
};
const blocks = shellBlocks(page);
const block = (step: Step): ShellBlock => {
  const found = blocks.find((b) => b.name === step);
  if (!found) throw new Error(`docs/deploy.md has no block marked <!-- deploy-doc: ${step} -->`);
  return found;
};

/** Groups of processes this file started (a page block run by bash and what it runs): killed on exit. */
const groups = new Set<number>();
process.once('exit', () => {
  for (const pid of groups) signalGroup(pid, 'SIGKILL');
});

interface BlockProcess {
  readonly child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (null for a signal). */
  readonly exited: Promise<number | null>;
  /** Resolves once `pattern` is in the output; rejects when the process exits first or `timeoutMs` passes. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<void>;
  /** SIGTERM to the group, SIGKILL after 15 s; resolves once it exited. */
  stop(): Promise<void>;
}

/** A block of the page, exactly as written, under `set -eu -o pipefail`, in its own process group. */
function startBlock(step: Step, env: NodeJS.ProcessEnv): BlockProcess {
  const child = spawn('bash', ['-c', `set -eu -o pipefail\n${block(step).text}`], {
    cwd: REPO_ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = child.pid ?? -1;
  groups.add(pid);
  let output = '';
  const listeners = new Set<() => void>();
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-200_000);
    for (const listener of [...listeners]) listener();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let done = false;
  const exited = new Promise<number | null>((resolve) => {
    child.once('close', (code) => {
      done = true;
      groups.delete(pid);
      // Anything the block started and left behind goes with it.
      signalGroup(pid, 'SIGKILL');
      for (const listener of [...listeners]) listener();
      resolve(code);
    });
  });
  return {
    child,
    output: () => output,
    exited,
    waitFor: (pattern, timeoutMs) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`block "${step}": no ${pattern} within ${timeoutMs / 1000} s; output:\n${output}`));
        }, timeoutMs);
        const check = () => {
          if (pattern.test(output)) {
            clearTimeout(timer);
            listeners.delete(check);
            resolve();
          } else if (done) {
            clearTimeout(timer);
            listeners.delete(check);
            reject(new Error(`block "${step}" exited before ${pattern}; output:\n${output}`));
          }
        };
        listeners.add(check);
        check();
      }),
    stop: async () => {
      if (done) return;
      signalGroup(pid, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Runs a block to its end; rejects with its output if it fails or outlives BLOCK_TIMEOUT_MS. */
async function runBlock(step: Step, env: NodeJS.ProcessEnv): Promise<string> {
  const running = startBlock(step, env);
  const timer = setTimeout(() => signalGroup(running.child.pid ?? -1, 'SIGKILL'), BLOCK_TIMEOUT_MS);
  const code = await running.exited;
  clearTimeout(timer);
  if (code !== 0) throw new Error(`block "${step}" failed (exit ${code}); output:\n${running.output()}`);
  return running.output();
}

/** One command (not a page block) with the same environment: its exit code, stdout and stderr. */
function runCommand(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * The environment without anything from the developer's shell that would change dh or Temporal, and an
 * operator's PATH: the system's (no npm script's `node_modules/.bin`), plus `binDir`, the Go binaries the page
 * says to put there.
 */
function baseEnv(binDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(DH_|TEMPORAL_|DEEPSEEK_|OPENAI_|OTEL_|SQL_|PG)/.test(key)) continue;
    if (/^npm_/i.test(key)) continue;
    env[key] = value;
  }
  const system = (process.env.PATH ?? '').split(':').filter((dir) => dir !== '' && !dir.includes('node_modules'));
  return { ...env, NO_COLOR: '1', PATH: [binDir, ...system].join(':') };
}

describe(
  'docs/deploy.md, followed block by block on a real cluster',
  { timeout: 2 * BLOCK_TIMEOUT_MS + 60_000 },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'dh-deploy-doc-'));
    const binDir = join(dir, 'bin');
    const payloadKey = randomBytes(32).toString('base64');
    const logKey = randomBytes(32).toString('base64');
    let databases: ClusterDatabases;
    let provider: ScriptedProvider;
    let base: NodeJS.ProcessEnv;
    /** Our values for each settings block, by the names the block exports. */
    let settings: Record<'server-settings' | 'dh-settings' | 'worker-settings', Record<string, string>>;
    let serverPorts: Record<string, string>;
    let server: BlockProcess | undefined;
    let worker: BlockProcess | undefined;

    const serverEnv = () => ({ ...base, ...settings['server-settings'], ...serverPorts });
    const dhEnv = () => ({ ...base, ...settings['dh-settings'] });
    // The worker's only addition beyond the page: the run's prebuilt workflow bundle (the same code, bundled once).
    const workerEnv = () => ({
      ...dhEnv(),
      ...settings['worker-settings'],
      DH_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    });

    beforeAll(async () => {
      mkdirSync(binDir);
      // The binaries the page builds, by the names it puts them on PATH under; `dh` is not one of them.
      symlinkSync(inject('temporalServerPath'), join(binDir, 'temporal-server'));
      symlinkSync(inject('temporalSqlToolPath'), join(binDir, 'temporal-sql-tool'));
      symlinkSync(inject('temporalCliPath'), join(binDir, 'temporal'));
      base = baseEnv(binDir);
      databases = clusterDatabases(inject('postgresUrl'), 'deploy_doc');
      provider = await startScriptedProvider({
        script: {
          models: [TEST_MODEL],
          mode: 'match',
          replies: [{ match: { lastUserContains: 'cluster' }, text: ANSWER }],
        },
      });
      const { db } = databases;
      const ports = await clusterEnv({
        binaries: { server: inject('temporalServerPath'), sqlTool: inject('temporalSqlToolPath') },
        db,
      });
      serverPorts = Object.fromEntries(SERVER_PORT_VARIABLES.map((name) => [name, ports[name] ?? '']));
      settings = {
        'server-settings': {
          TEMPORAL_DB_ADDRESS: db.address,
          TEMPORAL_DB_USER: db.user,
          TEMPORAL_DB_PASSWORD: db.password,
          TEMPORAL_DB: db.database,
          TEMPORAL_VISIBILITY_DB: `${db.database}_visibility`,
          SESSION_STORE_DB: databases.storeDb,
          TEMPORAL_NUM_HISTORY_SHARDS: '4',
          TEMPORAL_BIND_IP: '127.0.0.1',
          TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
        },
        'dh-settings': {
          TEMPORAL_ADDRESS: `127.0.0.1:${serverPorts.TEMPORAL_FRONTEND_PORT}`,
          TEMPORAL_NAMESPACE: 'default',
          DH_TASK_QUEUE: 'deploy-doc',
          DH_STORE: databases.storeUrl,
          DH_PAYLOAD_KEY: payloadKey,
          DH_LOG_KEY: logKey,
        },
        'worker-settings': {
          DH_HOST_ID: 'deploy-doc-host',
          DH_HOME: join(dir, 'home'),
          DH_PROVIDER: 'scripted',
          DH_BASE_URL: provider.url,
          DH_MODEL: TEST_MODEL,
          DH_API_KEY: 'sk-test-not-a-real-key',
        },
      };
    });

    afterAll(async () => {
      await worker?.stop();
      await server?.stop();
      await provider?.close();
      await databases?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('marks every shell block of the page, and they are the steps this test runs, in order', () => {
      expect(blocks.filter((b) => b.name === null).map((b) => `line ${b.line}`)).toEqual([]);
      expect(blocks.map((b) => b.name)).toEqual([...STEPS]);
    });

    it('its settings blocks export exactly the names the test gives, and agree with each other', () => {
      for (const step of ['server-settings', 'dh-settings', 'worker-settings'] as const) {
        expect([...exportedSettings(block(step)).keys()].sort(), step).toEqual(Object.keys(settings[step]).sort());
      }
      // The page's example store URL is the database and credentials its server settings name.
      const server = exportedSettings(block('server-settings'));
      const store = new URL(exportedSettings(block('dh-settings')).get('DH_STORE') ?? '');
      expect(`${store.username}:${store.password}@${store.host}${store.pathname}`).toBe(
        `${server.get('TEMPORAL_DB_USER')}:${server.get('TEMPORAL_DB_PASSWORD')}@${server.get('TEMPORAL_DB_ADDRESS')}/` +
          `${server.get('SESSION_STORE_DB')}`,
      );
      // What the test sets beyond the server's settings block is what the configuration table documents.
      const tableRows = configurationRows();
      for (const name of SERVER_PORT_VARIABLES) {
        expect(
          tableRows.some((row) => row.split('|')[1]?.includes(`\`${name}\``)),
          name,
        ).toBe(true);
      }
    });

    it('its configuration table lists every variable the server template reads, with the template’s defaults', () => {
      const template = readFileSync(join(DEPLOY_TEMPORAL_DIR, 'config', 'production.yaml'), 'utf8');
      const read = new Map<string, string>();
      for (const [, name = '', fallback = ''] of template.matchAll(/env "([A-Z0-9_]+)"(?: \| default "([^"]*)")?/g)) {
        read.set(name, fallback);
      }
      const documented = new Map<string, string>();
      for (const row of configurationRows()) {
        const [, names = '', defaults = ''] = row.split('|').map((cell) => cell.trim());
        const split = (cell: string) => cell.split(/, | \/ /).map((part) => part.replace(/^`|`$/g, ''));
        const values = split(defaults).map((value) => (value === 'empty' ? '' : value));
        // One default for several variables applies to each of them.
        for (const [i, name] of split(names).entries())
          documented.set(name, values[values.length === 1 ? 0 : i] ?? '?');
      }
      expect(Object.fromEntries(documented)).toEqual(Object.fromEntries(read));
    });

    it('binaries: builds the server and CLI versions the test setup pins; dh itself is not on PATH', async () => {
      expect(block('binaries').text).toContain(
        `go install go.temporal.io/server/cmd/server@v${TEMPORAL_SERVER_VERSION} ` +
          `go.temporal.io/server/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}\n`,
      );
      expect(block('binaries').text).toContain(
        `go install github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}\n`,
      );
      // The blocks that run dh say `npx dh`: an operator's PATH has no `dh`, and neither has the test's.
      const found = await runCommand('bash', ['-c', 'command -v dh || echo none'], base);
      expect(found.stdout.trim()).toBe('none');
    });

    it('databases: makes Temporal’s two at the schema version, and an empty one for the store', async () => {
      await runBlock('databases', serverEnv());
      const admin = new pg.Client({ connectionString: databaseUrl(inject('postgresUrl'), 'postgres') });
      await admin.connect();
      try {
        const { rows } = await admin.query<{ datname: string }>(
          'SELECT datname FROM pg_database WHERE datname = ANY($1) ORDER BY datname',
          [[databases.db.database, `${databases.db.database}_visibility`, databases.storeDb]],
        );
        expect(rows.map((r) => r.datname).sort()).toEqual(
          [databases.db.database, `${databases.db.database}_visibility`, databases.storeDb].sort(),
        );
      } finally {
        await admin.end();
      }
    });

    it('server and namespace: the server starts; the namespace has the retention and dh’s attributes, typed', async () => {
      server = startBlock('server', serverEnv());
      await runBlock('namespace', dhEnv()).catch((error: unknown) => {
        throw new Error(`${String(error)}\nserver output:\n${server?.output() ?? ''}`);
      });
      const connection = await Connection.connect({ address: settings['dh-settings'].TEMPORAL_ADDRESS ?? '' });
      try {
        const described = await connection.workflowService.describeNamespace({ namespace: 'default' });
        expect(Number(described.config?.workflowExecutionRetentionTtl?.seconds)).toBe(72 * 3600);
        const listed = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
        const types = Object.fromEntries(
          Object.keys(SESSION_SEARCH_ATTRIBUTES).map((name) => [
            name,
            proto.temporal.api.enums.v1.IndexedValueType[listed.customAttributes?.[name] ?? 0],
          ]),
        );
        expect(types).toEqual(
          Object.fromEntries(
            Object.entries(SESSION_SEARCH_ATTRIBUTES).map(([name, type]) => [
              name,
              `INDEXED_VALUE_TYPE_${type.toUpperCase()}`,
            ]),
          ),
        );
      } finally {
        await connection.close();
      }
    });

    it('worker and session: `npx dh worker` serves, `npx dh run` completes the turn, `npx dh audit` passes it', async () => {
      worker = startBlock('worker', workerEnv());
      await worker.waitFor(/"msg":"worker ready"/, BLOCK_TIMEOUT_MS);
      const output = await runBlock('session', dhEnv());
      expect(output).toContain(ANSWER);
      expect(output).toContain(`every MAC verifies under key id ${parseLogKey(logKey).keyId}`);
      expect(output).toContain('history mirror: ok');
      expect(output).toContain('AUDIT PASSED');
      const store = await PostgresSessionStore.open(databases.storeUrl);
      try {
        const events = await store.read(SESSION);
        expect(turnEnds(events)).toEqual(['1:completed']);
      } finally {
        await store.close();
      }
      expect(provider.stats().requests).toBeGreaterThan(0);
    });

    it('`dh audit` without the workers’ DH_PAYLOAD_KEY stops naming it, and the key id the history is under', async () => {
      const { DH_PAYLOAD_KEY: _payloadKey, ...withoutKey } = dhEnv();
      const audit = await runCommand('npx', ['dh', 'audit', SESSION], withoutKey);
      expect(audit.code).toBe(1);
      expect(audit.stderr).toContain(`encrypted (key id "${keyIdOf(Buffer.from(payloadKey, 'base64'))}")`);
      expect(audit.stderr).toContain('set DH_PAYLOAD_KEY to the key the workers encrypt with');
      expect(audit.stderr).toContain('[PAYLOAD_KEY_MISSING]');
      expect(audit.stderr).toContain('dh audit --no-mirror');
    });

    it('`dh audit` without DH_LOG_KEY checks the chain only and says which key would check the MACs', async () => {
      const { DH_LOG_KEY: _logKey, ...withoutKey } = dhEnv();
      const audit = await runCommand('npx', ['dh', 'audit', SESSION], withoutKey);
      expect(audit.stderr).not.toMatch(/^dh: /m);
      expect(audit.code).toBe(0);
      expect(audit.stdout).toContain('MACs not checked (no DH_LOG_KEY)');
      expect(audit.stdout).toContain(uncheckedMacsLimit([parseLogKey(logKey).keyId]));
    });
  },
);
