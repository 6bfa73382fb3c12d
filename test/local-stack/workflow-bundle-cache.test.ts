// The content-keyed workflow bundle cache: a repeated lookup reuses the stored file without bundling, a
// change of a workflow-side source or of tracing is another key, concurrent builders both end with a
// complete bundle, an unusable cache falls back to bundling in memory, and old bundles are evicted. With
// the real bundler: the bundle two concurrent callers get replays a committed history, every package in
// a real bundle's source map is part of the key, and a session worker without a prebuilt bundle runs a
// turn from the cache, and from memory when the cache cannot be written.
import { mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { readWorkerConfig } from '../../src/config/worker-config.js';
import {
  BUNDLE_CACHE_FORMAT,
  BUNDLE_PACKAGES,
  bundleCacheKey,
  cachedSessionWorkflowBundle,
  readBundleKeyInputs,
  writeSessionWorkflowBundle,
  type BundleKeyInputs,
  type CachedBundleOptions,
} from '../../src/local-stack/workflow-bundle-cache.js';
import { bundleHasTracing, workflowTracingSinks } from '../../src/observability/workflow-tracing.js';
import { followupSignal } from '../../src/shared/session-messages.js';
import { historyFromJSONObject, startScenarioRuntime, waitForTurnEnd } from '../helpers/scenario-runtime.js';

const tempDirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'dh-bundle-cache-'));
  tempDirs.push(dir);
  return dir;
}
afterAll(async () => {
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A small stand-in for src/: the three workflow-side folders, a value import out of them and a type import. */
async function fakeSourceDir(): Promise<string> {
  const src = join(await tempDir(), 'src');
  const files: Record<string, string> = {
    'workflows/index.ts': "export { agentSession } from './session-workflow.js';\n",
    'workflows/session-workflow.ts':
      "import { z } from 'zod';\nimport { version } from '../core/index.js';\n" +
      "import type { SessionActivities } from '../activities/session-activities.js';\n" +
      "import { helper } from '../observability/helper.js';\n" +
      'export async function agentSession(): Promise<string> { return version + helper + String(z); }\n',
    'core/index.ts': "export const version = '1';\n",
    'shared/task-queues.ts': "export const queue = 'q';\n",
    'observability/helper.ts': "export const helper = 'h';\n",
    'activities/session-activities.ts': 'export interface SessionActivities { x: number }\n',
  };
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(src, path, '..'), { recursive: true });
    await writeFile(join(src, path), content);
  }
  return src;
}

/** An injected bundler that counts its calls; its "bundle" names the entry and the call. */
function countingBundler(delayMs = 0): NonNullable<CachedBundleOptions['bundle']> & { calls: number } {
  const bundle = async (options: { tracing: boolean; workflowsPath: string }) => {
    bundle.calls += 1;
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    // Large enough that a reader of a half-written file would see it short.
    return `// bundle of ${options.workflowsPath} tracing=${options.tracing}\n${'x'.repeat(4 << 20)}\n// end\n`;
  };
  bundle.calls = 0;
  return bundle;
}

function codePathOf(result: { workflowBundle: { codePath: string } | { code: string } }): string {
  if (!('codePath' in result.workflowBundle)) throw new Error('expected a cached file, got code in memory');
  return result.workflowBundle.codePath;
}

const BASE: BundleKeyInputs = {
  format: BUNDLE_CACHE_FORMAT,
  sourceDir: '/repo/src',
  tracing: false,
  interceptorModules: [],
  packages: { '@temporalio/workflow': '1.24.0', zod: '4.6.7' },
  installedTree: 'a'.repeat(64),
  files: [
    ['core/index.ts', '1'.repeat(64)],
    ['workflows/index.ts', '2'.repeat(64)],
  ],
};

describe('bundleCacheKey', () => {
  it('is a function of the inputs, not of their order', () => {
    expect(bundleCacheKey(BASE)).toMatch(/^[0-9a-f]{64}$/);
    expect(bundleCacheKey({ ...BASE })).toBe(bundleCacheKey(BASE));
    expect(
      bundleCacheKey({
        ...BASE,
        files: [...BASE.files].reverse(),
        packages: { zod: '4.6.7', '@temporalio/workflow': '1.24.0' },
      }),
    ).toBe(bundleCacheKey(BASE));
  });

  it('changes with every input', () => {
    const variants: BundleKeyInputs[] = [
      { ...BASE, files: [['core/index.ts', '3'.repeat(64)], BASE.files[1]!] },
      { ...BASE, files: [...BASE.files, ['shared/new.ts', '4'.repeat(64)]] },
      { ...BASE, tracing: true },
      { ...BASE, interceptorModules: ['/repo/node_modules/x/workflow-interceptors.js'] },
      { ...BASE, packages: { ...BASE.packages, zod: '4.6.8' } },
      { ...BASE, installedTree: 'b'.repeat(64) },
      { ...BASE, installedTree: null },
      { ...BASE, sourceDir: '/elsewhere/src' },
      { ...BASE, format: BUNDLE_CACHE_FORMAT + 1 },
    ];
    const keys = new Set([bundleCacheKey(BASE), ...variants.map(bundleCacheKey)]);
    expect(keys.size).toBe(variants.length + 1);
  });
});

describe('readBundleKeyInputs', () => {
  it('reads the workflow-side folders and what they import by value, not type-only imports', async () => {
    const src = await fakeSourceDir();
    const inputs = await readBundleKeyInputs({ sourceDir: src });
    expect(inputs.files.map(([path]) => path).sort()).toEqual([
      'core/index.ts',
      'observability/helper.ts',
      'shared/task-queues.ts',
      'workflows/index.ts',
      'workflows/session-workflow.ts',
    ]);
    expect(Object.keys(inputs.packages)).toEqual(expect.arrayContaining([...BUNDLE_PACKAGES, 'zod']));
    expect(inputs.interceptorModules).toEqual([]);
    expect((await readBundleKeyInputs({ sourceDir: src, tracing: true })).interceptorModules).toHaveLength(1);
  });

  it('keys the real sources: the workflow entry, the core and the installed packages', async () => {
    const inputs = await readBundleKeyInputs();
    const paths = inputs.files.map(([path]) => path);
    expect(paths).toEqual(
      expect.arrayContaining(['workflows/index.ts', 'core/index.ts', 'shared/session-messages.ts']),
    );
    expect(paths.some((path) => path.startsWith('activities/'))).toBe(false); // type-only imports
    expect(inputs.packages['@temporalio/workflow']).toMatch(/^\d+\.\d+\.\d+/);
    expect(inputs.packages.zod).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('cachedSessionWorkflowBundle', () => {
  it('returns the stored file on a second call with unchanged inputs, without bundling again', async () => {
    const [src, dir, bundle] = [await fakeSourceDir(), await tempDir(), countingBundler()];
    const first = await cachedSessionWorkflowBundle({ sourceDir: src, dir, bundle });
    expect(first.outcome).toBe('built');
    const path = codePathOf(first);
    const before = await stat(path);
    const second = await cachedSessionWorkflowBundle({ sourceDir: src, dir, bundle });
    expect(second.outcome).toBe('hit');
    expect(codePathOf(second)).toBe(path);
    expect(bundle.calls).toBe(1);
    expect((await stat(path)).ino).toBe(before.ino); // the same file, not rewritten
  });

  it('bundles again under another key when a workflow-side source changes', async () => {
    const [src, dir, bundle] = [await fakeSourceDir(), await tempDir(), countingBundler()];
    const first = await cachedSessionWorkflowBundle({ sourceDir: src, dir, bundle });
    await writeFile(join(src, 'core', 'index.ts'), "export const version = '2';\n");
    const afterCore = await cachedSessionWorkflowBundle({ sourceDir: src, dir, bundle });
    // A file outside the folders that workflow code imports by value counts too.
    await writeFile(join(src, 'observability', 'helper.ts'), "export const helper = 'changed';\n");
    const afterHelper = await cachedSessionWorkflowBundle({ sourceDir: src, dir, bundle });
    expect(new Set([first.key, afterCore.key, afterHelper.key]).size).toBe(3);
    expect(afterCore.outcome).toBe('built');
    expect(afterHelper.outcome).toBe('built');
    expect(bundle.calls).toBe(3);
    // A Node-side file the workflows import only as a type does not.
    await writeFile(join(src, 'activities', 'session-activities.ts'), 'export interface SessionActivities { y: 1 }\n');
    expect((await cachedSessionWorkflowBundle({ sourceDir: src, dir, bundle })).outcome).toBe('hit');
  });

  it('keeps bundles with and without tracing under different keys', async () => {
    const [src, dir, bundle] = [await fakeSourceDir(), await tempDir(), countingBundler()];
    const plain = await cachedSessionWorkflowBundle({ sourceDir: src, dir, bundle });
    const traced = await cachedSessionWorkflowBundle({ sourceDir: src, dir, bundle, tracing: true });
    expect(traced.key).not.toBe(plain.key);
    expect(await readFile(codePathOf(traced), 'utf8')).toMatch(/^\/\/ bundle of .* tracing=true/);
    expect((await cachedSessionWorkflowBundle({ sourceDir: src, dir, bundle })).outcome).toBe('hit');
    expect((await cachedSessionWorkflowBundle({ sourceDir: src, dir, bundle, tracing: true })).outcome).toBe('hit');
    expect(bundle.calls).toBe(2);
  });

  it('gives two concurrent callers a complete bundle each (both build, the rename is atomic)', async () => {
    const [src, dir, bundle] = [await fakeSourceDir(), await tempDir(), countingBundler(50)];
    const results = await Promise.all([
      cachedSessionWorkflowBundle({ sourceDir: src, dir, bundle }),
      cachedSessionWorkflowBundle({ sourceDir: src, dir, bundle }),
    ]);
    expect(codePathOf(results[1])).toBe(codePathOf(results[0]));
    const code = await readFile(codePathOf(results[0]), 'utf8');
    expect(code.endsWith('// end\n')).toBe(true);
    expect(code.length).toBeGreaterThan(4 << 20);
    expect((await readdir(dir)).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('keeps a bundle out of the cache when a source changed while it was bundled', async () => {
    const [src, dir] = [await fakeSourceDir(), await tempDir()];
    const inner = countingBundler();
    const bundle: NonNullable<CachedBundleOptions['bundle']> = async (options) => {
      const code = await inner(options);
      await writeFile(join(src, 'core', 'index.ts'), "export const version = 'edited meanwhile';\n");
      return code;
    };
    const result = await cachedSessionWorkflowBundle({ sourceDir: src, dir, bundle });
    expect(result.outcome).toBe('memory');
    expect('code' in result.workflowBundle).toBe(true);
    expect(await readdir(dir)).toEqual([]);
  });

  it('falls back to a bundle in memory, with one log line, when the cache cannot be written', async () => {
    const [src, bundle] = [await fakeSourceDir(), countingBundler()];
    const file = join(await tempDir(), 'not-a-directory');
    await writeFile(file, '');
    const lines: string[] = [];
    const result = await cachedSessionWorkflowBundle({
      sourceDir: src,
      dir: join(file, 'workflow-bundles'),
      bundle,
      log: (line) => lines.push(line),
    });
    expect(result.outcome).toBe('memory');
    expect('code' in result.workflowBundle && result.workflowBundle.code).toMatch(/^\/\/ bundle of /);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/workflow bundle cache: cannot write .*not-a-directory/);
  });

  it('keeps the most recently used bundles and deletes the older ones after a write', async () => {
    const [src, dir, bundle] = [await fakeSourceDir(), await tempDir(), countingBundler()];
    const options = { sourceDir: src, dir, bundle, maxBundles: 2, evictGraceMs: 0 };
    const paths: string[] = [];
    for (let i = 0; i < 2; i++) {
      await writeFile(join(src, 'core', 'index.ts'), `export const version = '${i}';\n`);
      paths.push(codePathOf(await cachedSessionWorkflowBundle(options)));
      // Distinct ages regardless of the clock's resolution: bundle 0 is the oldest.
      const at = new Date(Date.now() - (10 - i) * 60_000);
      await utimes(paths[i]!, at, at);
    }
    // Using bundle 0 makes it the most recently used: the next write evicts bundle 1 instead.
    await writeFile(join(src, 'core', 'index.ts'), "export const version = '0';\n");
    expect((await cachedSessionWorkflowBundle(options)).outcome).toBe('hit');
    await writeFile(join(src, 'core', 'index.ts'), "export const version = '2';\n");
    const newest = codePathOf(await cachedSessionWorkflowBundle(options));
    const left = (await readdir(dir)).map((name) => join(dir, name)).sort();
    expect(left).toEqual([paths[0]!, newest].sort());
    expect(bundle.calls).toBe(3);
  });

  it('never evicts a bundle used within the grace period', async () => {
    const [src, dir, bundle] = [await fakeSourceDir(), await tempDir(), countingBundler()];
    const options = { sourceDir: src, dir, bundle, maxBundles: 1, evictGraceMs: 60_000 };
    const first = codePathOf(await cachedSessionWorkflowBundle(options));
    await writeFile(join(src, 'core', 'index.ts'), "export const version = 'next';\n");
    await cachedSessionWorkflowBundle(options);
    expect(await readdir(dir)).toContain(first.slice(dir.length + 1));
  });

  it('writes a copy the caller owns, from the cache', async () => {
    const [src, dir, bundle] = [await fakeSourceDir(), await tempDir(), countingBundler()];
    const out = join(await tempDir(), 'demo', 'workflow-bundle.js');
    const first = await writeSessionWorkflowBundle(out, { sourceDir: src, dir, bundle });
    const second = await writeSessionWorkflowBundle(out, { sourceDir: src, dir, bundle });
    expect([first.outcome, second.outcome]).toEqual(['built', 'hit']);
    expect(second.codePath).toBe(out);
    expect(await readFile(out, 'utf8')).toMatch(/^\/\/ bundle of /);
    expect(bundle.calls).toBe(1);
  });
});

describe('DH_WORKFLOW_BUNDLE_CACHE', () => {
  it('is on unless set to off; another value is refused', () => {
    expect(readWorkerConfig({}).workflowBundleCache).toBe(true);
    expect(readWorkerConfig({ DH_WORKFLOW_BUNDLE_CACHE: 'on' }).workflowBundleCache).toBe(true);
    expect(readWorkerConfig({ DH_WORKFLOW_BUNDLE_CACHE: 'off' }).workflowBundleCache).toBe(false);
    expect(() => readWorkerConfig({ DH_WORKFLOW_BUNDLE_CACHE: 'no' })).toThrow(/DH_WORKFLOW_BUNDLE_CACHE/);
  });
});

/** The packages (node_modules/<name>) whose files a bundle's inline source map lists. */
function bundledPackages(code: string): string[] {
  const marker = 'sourceMappingURL=data:application/json;charset=utf-8;base64,';
  const map = JSON.parse(Buffer.from(code.slice(code.lastIndexOf(marker) + marker.length).trim(), 'base64').toString());
  const names = new Set<string>();
  for (const source of map.sources as string[]) {
    for (const match of source.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)) names.add(match[1]!);
  }
  return [...names].sort();
}

describe('with the real bundler', { timeout: 180_000 }, () => {
  it('gives two workers starting together on an empty cache one complete bundle that replays a history', async () => {
    const dir = await tempDir();
    const results = await Promise.all([cachedSessionWorkflowBundle({ dir }), cachedSessionWorkflowBundle({ dir })]);
    expect(results.map((r) => r.outcome)).toEqual(['built', 'built']);
    const codePath = codePathOf(results[0]);
    expect(codePathOf(results[1])).toBe(codePath);
    expect(await bundleHasTracing(codePath)).toBe(false);
    // zod is loaded once per workflow thread and shared, not instantiated for every workflow.
    const code = await readFile(codePath, 'utf8');
    const preload = /exports\.preloadModules = function preloadModules\(\) \{([^}]*)\}/.exec(code)?.[1] ?? '';
    expect(preload).toMatch(/__webpack_require__\(.*"\.\/src\/workflows\/shared-zod\.ts"\)/);
    const history = historyFromJSONObject(
      JSON.parse(
        await readFile(fileURLToPath(new URL('../fixtures/histories/signal-with-start.json', import.meta.url)), 'utf8'),
      ),
    );
    await Worker.runReplayHistory({ workflowBundle: { codePath }, sinks: workflowTracingSinks() }, history);
    const inputs = await readBundleKeyInputs();
    expect(Object.keys(inputs.packages)).toEqual(
      expect.arrayContaining(bundledPackages(await readFile(codePath, 'utf8'))),
    );
    expect((await cachedSessionWorkflowBundle({ dir })).outcome).toBe('hit');
  });

  it('bundles the tracing interceptors under their own key, with every bundled package in the key', async () => {
    const dir = await tempDir();
    const traced = await cachedSessionWorkflowBundle({ dir, tracing: true });
    const codePath = codePathOf(traced);
    expect(await bundleHasTracing(codePath)).toBe(true);
    const packages = bundledPackages(await readFile(codePath, 'utf8'));
    expect(packages).toContain('@temporalio/interceptors-opentelemetry');
    expect(BUNDLE_PACKAGES).toEqual(expect.arrayContaining(packages));
  });
});

describe('a session worker without a prebuilt bundle', { timeout: 180_000 }, () => {
  /** A worker (createSessionWorker, no workflowBundlePath) on the run's dev server runs one turn. */
  async function runOneTurn(sessionId: string): Promise<void> {
    const h = await startScenarioRuntime({
      address: inject('temporalAddress'),
      namespace: inject('temporalNamespace'),
      script: { replies: [{ text: 'hello from a cached bundle' }] },
    });
    try {
      const handle = await h.start(sessionId);
      await handle.signal(followupSignal, { content: 'hi' });
      const events = await waitForTurnEnd(h.store, sessionId, 1);
      expect(events.find((e) => e.type === 'turn/end')).toMatchObject({ reason: 'completed' });
    } finally {
      await h.stop();
    }
  }

  it('runs from the bundle cache, and from a bundle in memory when the cache cannot be written', async () => {
    const saved = process.env.DH_CACHE_DIR;
    try {
      const cache = await tempDir();
      process.env.DH_CACHE_DIR = cache;
      await runOneTurn(`bundle-cache-${process.pid}-stored`);
      expect((await readdir(join(cache, 'workflow-bundles'))).filter((name) => name.endsWith('.js'))).toHaveLength(1);

      const file = join(await tempDir(), 'a-file');
      await writeFile(file, '');
      process.env.DH_CACHE_DIR = join(file, 'cache');
      await runOneTurn(`bundle-cache-${process.pid}-unwritable`);
    } finally {
      if (saved === undefined) delete process.env.DH_CACHE_DIR;
      else process.env.DH_CACHE_DIR = saved;
    }
  });
});
