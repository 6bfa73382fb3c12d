// The @durable-harness/client package as a user gets it: packed from the workspace, installed from the
// tarball into a fresh project (its dependencies from the registry), free of the worker's native
// dependencies, and steering a session on the run's Temporal server from a plain ESM script.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../../src/client/session-client.js';
import type { SessionWorkflow } from '../../src/shared/session-workflow-input.js';
import { agentSession } from '../../src/workflows/session-workflow.js';
import { expectProviderSawTheLog, startHarness, type Harness } from '../helpers/session-harness.js';
import { waitForLog } from '../helpers/scenario-runtime.js';

// The client names the workflow by its signature (so the package compiles without the workflow code):
// this keeps that signature the workflow's own.
const workflowHasTheClientsSignature: SessionWorkflow = agentSession;
void workflowHasTheClientsSignature;

const run = promisify(execFile);
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PACKAGE = '@durable-harness/client';
/**
 * Everything the package's compiled files may import besides their own files: its dependencies (its
 * declarations name @temporalio/common's definition types, so it declares that package too).
 */
const ALLOWED_DEPENDENCIES = [
  '@noble/hashes',
  '@temporalio/client',
  '@temporalio/common',
  '@temporalio/workflow',
  'zod',
];
/** The worker's side: none of it may reach a service that only steers sessions. */
const WORKER_ONLY = ['better-sqlite3', 'pg', '@temporalio/worker'];

const npm = (args: readonly string[], cwd: string) =>
  run('npm', [...args], {
    cwd,
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });

/** The package a bare specifier names (`@scope/name/sub` → `@scope/name`, `zod/v4` → `zod`). */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : [path];
  });
}

/** Every module specifier of a compiled file: static imports and re-exports, bare imports, dynamic imports. */
function specifiersOf(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(?\s*['"]([^'"]+)['"]/g)) {
    const specifier = match[1] ?? match[2];
    if (specifier !== undefined) found.push(specifier);
  }
  return found;
}

describe('the client package, installed from its tarball into a fresh project', () => {
  let h: Harness;
  let dir: string;
  let project: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dh-client-package-'));
    project = join(dir, 'service');
    const [harness, packed] = await Promise.all([
      startHarness({
        script: {
          mode: 'match',
          replies: [
            // Slow enough that the steer lands while the first turn runs.
            { match: { lastUserContains: 'from a service' }, text: 'working on it', delayMs: 1500 },
            { match: { lastUserContains: 'steered through the package' }, text: 'steered', repeat: 2 },
          ],
        },
      }),
      npm(['pack', '--workspace', 'packages/client', '--pack-destination', dir, '--json'], repoRoot),
    ]);
    h = harness;
    const [entry] = JSON.parse(packed.stdout) as Array<{ filename: string }>;
    if (entry === undefined) throw new Error(`npm pack reported no tarball: ${packed.stdout}`);
    const tarball = join(dir, entry.filename);
    // A user's project: its own package.json, the package installed the way docs/client.md says.
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'steering-service', version: '1.0.0', private: true, type: 'module' }, null, 2),
    );
    await npm(['install', '--no-audit', '--no-fund', tarball], project);
  }, 300_000);

  afterAll(async () => {
    await h?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('leaves out the worker: no better-sqlite3, pg or worker SDK in the project', () => {
    expect(existsSync(join(project, 'node_modules', ...PACKAGE.split('/'), 'package.json'))).toBe(true);
    const present = WORKER_ONLY.filter((name) => existsSync(join(project, 'node_modules', ...name.split('/'))));
    expect(present).toEqual([]);
  });

  it('its compiled files import only their own files and the dependencies it declares', () => {
    const installed = join(project, 'node_modules', ...PACKAGE.split('/'));
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    expect(Object.keys(manifest.dependencies ?? {}).sort()).toEqual(ALLOWED_DEPENDENCIES);
    const dist = join(installed, 'dist');
    const files = filesUnder(dist).filter((f) => f.endsWith('.js') || f.endsWith('.d.ts'));
    expect(files.map((f) => relative(dist, f))).toContain(join('client', 'client-package.js'));
    const outside: string[] = [];
    for (const file of files) {
      for (const specifier of specifiersOf(readFileSync(file, 'utf8'))) {
        const ok = specifier.startsWith('.')
          ? resolve(dirname(file), specifier).startsWith(dist + sep)
          : ALLOWED_DEPENDENCIES.includes(packageOf(specifier));
        if (!ok) outside.push(`${relative(dist, file)}: ${specifier}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it('an ESM script in the project steers a session through SessionClient from the package name', async () => {
    const sessionId = `client-package-${Date.now()}`;
    h.sessionIds.add(sessionId);
    writeFileSync(
      join(project, 'steer.mjs'),
      [
        "import { Client, Connection } from '@temporalio/client';",
        `import { SessionClient, DEFAULT_LIMITS } from '${PACKAGE}';`,
        'const [address, namespace, taskQueue, sessionId] = process.argv.slice(2);',
        'const connection = await Connection.connect({ address });',
        'const sessions = new SessionClient(new Client({ connection, namespace }), { taskQueue });',
        "await sessions.followup(sessionId, 'Hello from a service', { start: true, limits: DEFAULT_LIMITS });",
        "await sessions.steer(sessionId, 'You are steered through the package', { messageId: 'pkg-steer-1', source: 'steering-service' });",
        'const state = await sessions.state(sessionId);',
        'console.log(JSON.stringify({ status: state.status }));',
        'await connection.close();',
      ].join('\n') + '\n',
    );
    const { stdout } = await run(
      'node',
      ['steer.mjs', inject('temporalAddress'), inject('temporalNamespace'), h.taskQueue, sessionId],
      { cwd: project },
    );
    expect(JSON.parse(stdout.trim())).toHaveProperty('status');

    const events = await waitForLog(
      h.store,
      sessionId,
      (log) => log.some((e) => e.type === 'inbox/enqueue' && e.messageId === 'pkg-steer-1'),
      'the steer entering the log',
    );
    const steer = events.find((e) => e.type === 'inbox/enqueue' && e.messageId === 'pkg-steer-1');
    expect(steer).toMatchObject({
      origin: 'steer',
      source: 'steering-service',
      content: 'You are steered through the package',
    });
    await waitForLog(
      h.store,
      sessionId,
      (log) => {
        const claimed = log.findIndex((e) => e.type === 'user/message' && e.messageId === 'pkg-steer-1');
        return claimed >= 0 && log.slice(claimed).some((e) => e.type === 'turn/end');
      },
      'the steer reaching the model, and its turn ending',
    );
    await new SessionClient(h.client, { taskQueue: h.taskQueue }).close(sessionId, 'test done');
    await expectProviderSawTheLog(h, [sessionId]);
  }, 60_000);
});
