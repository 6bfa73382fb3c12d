// The package as a user gets it: the repository packed (`npm pack`: compiled JavaScript, declarations, the CLI,
// the console), examples/support-agent installed from that tarball in a project of its own, type-checked against
// the installed package (with its declarations checked too, and every TypeScript snippet of
// docs/building-agents.md beside the example's code), and the example's own tests run on the testing kit.
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { fencedBlocks } from '../docs/markdown-scan.js';
import { exampleProject, type ExampleProject, type PackageManifest } from './example-project.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const EXAMPLE = join(ROOT, 'examples', 'support-agent');
const GUIDE = 'docs/building-agents.md';
const run = promisify(execFile);
const MINUTE = 60_000;

interface Outcome {
  readonly code: number | null;
  readonly output: string;
  readonly ms: number;
}

/** This process's environment for the user's commands: no npm, vitest or dh settings of the suite leak in. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(DH_|TEMPORAL_|VITEST|npm_)/.test(key) || key === 'NODE_ENV' || key === 'INIT_CWD') continue;
    env[key] = value;
  }
  env.PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.includes('node_modules'))
    .join(':');
  // The caches stay the suite's (the Temporal CLI, the workflow bundles).
  for (const key of ['DH_CACHE_DIR', 'TEMPORAL_CLI_PATH']) if (process.env[key]) env[key] = process.env[key];
  return env;
}

/** Runs a command to its end, collecting its output (never rejects). */
function runToEnd(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Outcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(command, [...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.once('error', (error) => (output += `\nspawn failed: ${error.message}`));
    child.once('close', (code) => resolve({ code, output, ms: Date.now() - started }));
  });
}

/** What the repository's own `prepack` and `prepare` build, without Vite emptying a console build tests serve. */
async function buildPackage(log: (line: string) => void): Promise<void> {
  const started = Date.now();
  await run('npm', ['run', 'build'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
  await run(process.execPath, ['scripts/build-cli.mjs'], { cwd: ROOT });
  try {
    readFileSync(join(ROOT, 'dist', 'console-ui', 'index.html'));
  } catch {
    await run(process.execPath, ['scripts/build-ui.mjs'], { cwd: ROOT });
  }
  log(`packed example: built the package in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

describe('the packed package, installed into the example project', () => {
  const log = (line: string): void => console.log(line);
  let dir: string;
  let project: ExampleProject;
  let packedFiles: string[];
  let typecheck: Promise<Outcome>;
  let tests: Promise<Outcome>;
  let snippetFiles: Map<string, number>;

  beforeAll(async () => {
    const started = Date.now();
    dir = await mkdtemp(join(tmpdir(), 'dh-packed-example-'));
    await buildPackage(log);
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
    const [entry] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    if (entry === undefined) throw new Error(`npm pack reported no tarball: ${packed.stdout}`);
    packedFiles = entry.files.map((file) => file.path);
    const sqlite = join(ROOT, 'node_modules', 'better-sqlite3');
    project = await exampleProject({
      example: EXAMPLE,
      tarball: join(dir, entry.filename),
      packedManifest: JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageManifest,
      betterSqlite3: {
        version: (JSON.parse(readFileSync(join(sqlite, 'package.json'), 'utf8')) as { version: string }).version,
        addon: join(sqlite, 'build', 'Release', 'better_sqlite3.node'),
      },
      env: userEnv(),
      log,
    });
    // Every TypeScript block of the guide, as a module beside the example's agents (it may import them).
    snippetFiles = new Map();
    for (const [i, block] of fencedBlocks(readFileSync(join(ROOT, GUIDE), 'utf8'), ['ts']).entries()) {
      const file = `src/doc-snippet-${i + 1}.ts`;
      await writeFile(join(project.dir, file), block.text);
      snippetFiles.set(file, block.line);
    }
    const bin = (name: string) => join(project.dir, 'node_modules', '.bin', name);
    // Both at once: the type-check is CPU, the tests mostly wait on a heartbeat timeout.
    typecheck = runToEnd(bin('tsc'), ['--noEmit', '-p', '.', '--skipLibCheck', 'false'], project.dir, userEnv());
    tests = runToEnd(bin('vitest'), ['run'], project.dir, {
      ...userEnv(),
      // The suite's dev server: the kit uses it instead of starting one per harness.
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      // The in-process worker's step lines (its logging plugin) would fill the failure message.
      DH_LOG_LEVEL: 'warn',
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    });
    log(`packed example: ${project.install} install, ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 20 * MINUTE);

  afterAll(async () => {
    await Promise.allSettled([typecheck, tests]);
    await project?.release();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('holds the build, not the sources, tests, benchmarks or docs', () => {
    for (const file of [
      'bin/dh.mjs',
      'dist/cli/stamp.json',
      'dist/console-ui/index.html',
      'dist/src/index.d.ts',
      'dist/src/worker/index.js',
      'dist/src/client/client-package.d.ts',
      'dist/src/testing/index.js',
      'dist/src/workflows/index.js',
      'examples/scripts/demo.yaml',
      'CHANGELOG.md',
    ]) {
      expect(packedFiles).toContain(file);
    }
    const strays = packedFiles.filter((file) =>
      /^(src|test|bench|docs|deploy|scripts|console-ui|packages)\//.test(file),
    );
    expect(strays).toEqual([]);
  });

  it('runs its dh bin from the build it was packed with', async () => {
    const dh = await runToEnd(join(project.dir, 'node_modules', '.bin', 'dh'), ['--help'], project.dir, {
      ...userEnv(),
      DH_BIN_TRACE: '1',
    });
    expect(dh.code, dh.output).toBe(0);
    expect(dh.output).toMatch(/dh-bin: compiled .*node_modules\/durable-harness\/dist\/cli\//);
  });

  it(
    'type-checks the example, the guide’s snippets and the package’s declarations',
    { timeout: 10 * MINUTE },
    async () => {
      const { code, output, ms } = await typecheck;
      log(`packed example: tsc in ${(ms / 1000).toFixed(1)} s`);
      const errors = output.split('\n').filter((line) => / error TS\d+:/.test(line));
      // Other packages' declarations are theirs: @temporalio's do not compile under exactOptionalPropertyTypes
      // (a `tsc --init` default), which is why its skipLibCheck default is on.
      const ours = errors.filter(
        (line) => !line.startsWith('node_modules/') || line.startsWith('node_modules/durable-harness/'),
      );
      const located = ours.map((line) => {
        const at = /^(src\/doc-snippet-\d+\.ts)\((\d+),/.exec(line);
        const start = at?.[1] !== undefined ? snippetFiles.get(at[1]) : undefined;
        return start !== undefined ? `${GUIDE}:${start + Number(at?.[2]) - 1}: ${line}` : line;
      });
      expect(located, output.slice(-4_000)).toEqual([]);
      if (errors.length === 0) expect(code).toBe(0);
      expect(snippetFiles.size).toBeGreaterThan(0);
    },
  );

  it('passes its own tests on the testing kit', { timeout: 10 * MINUTE }, async () => {
    const { code, output, ms } = await tests;
    log(`packed example: its tests in ${(ms / 1000).toFixed(1)} s`);
    expect(code, output.slice(-6_000)).toBe(0);
    // eslint-disable-next-line no-control-regex -- vitest colours its summary
    expect(output.replace(/\u001b\[[0-9;]*m/g, '')).toMatch(/Tests\s+2 passed \(2\)/);
  });
});
