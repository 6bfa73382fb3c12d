// A content-keyed cache of session-workflow bundles in the per-user cache (cacheDir()/workflow-bundles),
// so a worker whose workflow code, bundled packages and bundling options are unchanged loads a bundle
// from disk at start instead of running webpack (seconds on a small machine) every time.
//
// The key is a sha256 over everything that shapes the bundle: the contents of every file under the
// folders workflow code may import from (src/core, src/shared, src/workflows: the import fence in
// eslint.config.js) plus any other repo file they import by value, the interceptor modules (tracing on
// or off), the versions of the packages whose code is bundled (and of the bundler), the installed tree's
// lock file, the source folder's absolute path (the bundle's source map names files by it) and a format
// version. A changed input is a new key, so nothing is ever invalidated in place: old bundles are
// evicted, least recently used first.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import {
  bundleInterceptorModules,
  bundleSessionWorkflowCode,
  bundleSessionWorkflows,
  sessionWorkflowsPath,
  workflowSourceDir,
  type BundleOptions,
} from './bundle-workflows.js';
import { cacheDir } from './go-build-cache.js';

/**
 * Bump when the cache's layout or anything in bundleSessionWorkflowCode's bundler options changes
 * (old bundles then stop matching and age out).
 */
export const BUNDLE_CACHE_FORMAT = 2;
/** `DH_WORKFLOW_BUNDLE_CACHE=off`: workers bundle the workflows from source at every start. */
export const BUNDLE_CACHE_ENV = 'DH_WORKFLOW_BUNDLE_CACHE';
/** Bundles kept; older ones (by last use) are deleted after a new one is written. */
export const MAX_CACHED_BUNDLES = 8;
/**
 * A bundle used this recently is never evicted, even beyond MAX_CACHED_BUNDLES: a worker reads its
 * bundle once, in `Worker.create` right after the lookup, and keeps the code in memory afterwards.
 */
const EVICT_GRACE_MS = 60_000;
/** A temporary file this old was left by a builder that died before renaming it. */
const STALE_TEMP_MS = 60 * 60_000;

/** The folders (under src/) workflow code may import from: the sandbox import fence in eslint.config.js. */
export const WORKFLOW_SOURCE_DIRS: readonly string[] = ['core', 'shared', 'workflows'];

/**
 * Packages whose code ends up in a bundle (with or without tracing), and the bundler's own. A test
 * checks this list against the packages named in a real bundle's source map; packages the workflow
 * sources import directly are added to the key as they are found.
 */
export const BUNDLE_PACKAGES: readonly string[] = [
  '@temporalio/workflow',
  '@temporalio/common',
  'long',
  'ms',
  'nexus-rpc',
  'zod',
  '@noble/hashes',
  '@temporalio/interceptors-opentelemetry',
  '@opentelemetry/api',
  '@opentelemetry/core',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/semantic-conventions',
  // The bundler: its version pins the webpack config; webpack and swc shape the output too.
  '@temporalio/worker',
  'webpack',
  'swc-loader',
  '@swc/core',
];

/** Everything the key is computed from; bundleCacheKey is a pure function of it. */
export interface BundleKeyInputs {
  readonly format: number;
  /** Absolute: the bundle's source map names the workflow sources by absolute path. */
  readonly sourceDir: string;
  readonly tracing: boolean;
  /** Absolute paths of the workflow interceptor modules bundled. */
  readonly interceptorModules: readonly string[];
  /** Package name → installed version (null: not found). */
  readonly packages: Readonly<Record<string, string | null>>;
  /** sha256 of node_modules/.package-lock.json (npm's record of the installed tree), null without one. */
  readonly installedTree: string | null;
  /** [path relative to sourceDir, sha256 of the contents] ('' for an import that resolves to no file). */
  readonly files: ReadonlyArray<readonly [string, string]>;
}

/** The cache key: sha256 (hex) over the inputs, independent of the order of `files` and `packages`. */
export function bundleCacheKey(inputs: BundleKeyInputs): string {
  const canonical = {
    format: inputs.format,
    sourceDir: inputs.sourceDir,
    tracing: inputs.tracing,
    interceptorModules: [...inputs.interceptorModules],
    packages: Object.entries(inputs.packages).sort(([a], [b]) => compare(a, b)),
    installedTree: inputs.installedTree,
    files: [...inputs.files].map(([path, hash]) => [path, hash]).sort(([a], [b]) => compare(a!, b!)),
  };
  return sha256(JSON.stringify(canonical));
}

/** Reads the key's inputs from disk: the workflow-side sources under `sourceDir` and the installed packages. */
export async function readBundleKeyInputs(
  options: { readonly sourceDir?: string; readonly tracing?: boolean } = {},
): Promise<BundleKeyInputs> {
  const sourceDir = resolve(options.sourceDir ?? workflowSourceDir());
  const tracing = options.tracing === true;
  const { files, packagesImported } = await readWorkflowSources(sourceDir);
  const packages: Record<string, string | null> = {};
  for (const name of new Set([...BUNDLE_PACKAGES, ...packagesImported])) {
    packages[name] = await installedVersion(sourceDir, name);
  }
  const lockFile = findUp(sourceDir, join('node_modules', '.package-lock.json'));
  return {
    format: BUNDLE_CACHE_FORMAT,
    sourceDir,
    tracing,
    interceptorModules: bundleInterceptorModules({ tracing }),
    packages,
    installedTree: lockFile === null ? null : sha256(await readFile(lockFile)),
    files,
  };
}

export interface CachedBundleOptions extends BundleOptions {
  /** Where bundles are kept (default `cacheDir()/workflow-bundles`). */
  readonly dir?: string;
  /** The src folder to bundle and key from (default: the one this module runs from). */
  readonly sourceDir?: string;
  /** Bundles kept (default MAX_CACHED_BUNDLES). */
  readonly maxBundles?: number;
  /** A bundle used this recently is never evicted (default 60 s). */
  readonly evictGraceMs?: number;
  /** Produces a bundle's code (default: Temporal's bundler, bundleSessionWorkflowCode). */
  readonly bundle?: (options: { readonly tracing: boolean; readonly workflowsPath: string }) => Promise<string>;
  /** Where the one line about an unusable cache goes (default: stderr). */
  readonly log?: (line: string) => void;
}

export interface CachedBundle {
  /** For `Worker.create({ workflowBundle })`: the cached file, or the code itself when the cache could not be used. */
  readonly workflowBundle: { readonly codePath: string } | { readonly code: string };
  /** `hit`: found in the cache; `built`: bundled and stored; `memory`: bundled, the cache unusable. */
  readonly outcome: 'hit' | 'built' | 'memory';
  readonly key: string | null;
}

/**
 * The session-workflow bundle for these options: the cached file when the key matches, else bundled
 * and stored. A cache that cannot be read or written never fails the caller: it logs one line and
 * returns the code in memory (bundled from source, as without a cache).
 *
 * No lock: the write is atomic (a temporary file renamed into place), so a reader only ever sees a
 * complete bundle. Two workers that miss at the same time both bundle and both rename; the contents
 * are the same and the last rename wins.
 */
export async function cachedSessionWorkflowBundle(options: CachedBundleOptions = {}): Promise<CachedBundle> {
  const tracing = options.tracing === true;
  const sourceDir = resolve(options.sourceDir ?? workflowSourceDir());
  const workflowsPath = sessionWorkflowsPath(sourceDir);
  const build = options.bundle ?? ((o) => bundleSessionWorkflowCode(o));
  const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const dir = options.dir ?? join(cacheDir(), 'workflow-bundles');

  let key: string;
  try {
    key = bundleCacheKey(await readBundleKeyInputs({ sourceDir, tracing }));
  } catch (error) {
    log(`workflow bundle cache: cannot compute the key (${errorMessage(error)}); bundling in memory`);
    return { workflowBundle: { code: await build({ tracing, workflowsPath }) }, outcome: 'memory', key: null };
  }
  const codePath = join(dir, `${key}.js`);
  const found = await stat(codePath).catch(() => null);
  if (found?.isFile() && found.size > 0) {
    // Marks it recently used (eviction goes by mtime); a read-only cache still serves hits.
    const now = new Date();
    await utimes(codePath, now, now).catch(() => undefined);
    return { workflowBundle: { codePath }, outcome: 'hit', key };
  }

  const code = await build({ tracing, workflowsPath });
  // A source edited while the bundler ran: the code may not be what the key says; keep it out of the cache.
  const after = await readBundleKeyInputs({ sourceDir, tracing }).then(bundleCacheKey, () => null);
  if (after !== key) return { workflowBundle: { code }, outcome: 'memory', key: null };
  const temp = join(dir, `.${key}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(temp, code);
    await rename(temp, codePath);
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined);
    log(`workflow bundle cache: cannot write ${dir} (${errorMessage(error)}); using the bundle from memory`);
    return { workflowBundle: { code }, outcome: 'memory', key };
  }
  await evictBundles(dir, {
    keep: options.maxBundles ?? MAX_CACHED_BUNDLES,
    graceMs: options.evictGraceMs ?? EVICT_GRACE_MS,
    except: codePath,
  }).catch(() => undefined);
  return { workflowBundle: { codePath }, outcome: 'built', key };
}

/**
 * Writes the session-workflow bundle to `outFile`, a copy the caller owns (eviction never touches it):
 * from the cache, or bundled from source when `cache` is false. For processes that hand a bundle path
 * to other workers for a long time (the demo, the test suite).
 */
export async function writeSessionWorkflowBundle(
  outFile: string,
  options: CachedBundleOptions & { readonly cache?: boolean } = {},
): Promise<{ codePath: string; outcome: CachedBundle['outcome'] | 'uncached' }> {
  if (options.cache === false) {
    return { ...(await bundleSessionWorkflows(outFile, { tracing: options.tracing === true })), outcome: 'uncached' };
  }
  const { workflowBundle, outcome } = await cachedSessionWorkflowBundle(options);
  await mkdir(dirname(outFile), { recursive: true });
  if ('codePath' in workflowBundle) {
    const copied = await copyFile(workflowBundle.codePath, outFile).then(
      () => true,
      () => false, // Evicted between the lookup and the copy (another process's write): bundle afresh.
    );
    if (!copied) {
      return { ...(await bundleSessionWorkflows(outFile, { tracing: options.tracing === true })), outcome: 'uncached' };
    }
  } else {
    await writeFile(outFile, workflowBundle.code);
  }
  return { codePath: outFile, outcome };
}

/** Deletes all but the `keep` most recently used bundles (none used within `graceMs`), and stale temp files. */
export async function evictBundles(
  dir: string,
  options: { readonly keep: number; readonly graceMs: number; readonly except?: string },
): Promise<string[]> {
  const now = Date.now();
  const bundles: Array<{ path: string; mtimeMs: number }> = [];
  for (const name of await readdir(dir)) {
    const path = join(dir, name);
    const info = await stat(path).catch(() => null);
    if (info === null || !info.isFile()) continue;
    if (/^[0-9a-f]{64}\.js$/.test(name)) bundles.push({ path, mtimeMs: info.mtimeMs });
    else if (name.endsWith('.tmp') && now - info.mtimeMs > STALE_TEMP_MS) await rm(path, { force: true });
  }
  bundles.sort((a, b) => b.mtimeMs - a.mtimeMs);
  const deleted: string[] = [];
  for (const bundle of bundles.slice(Math.max(0, options.keep))) {
    if (bundle.path === options.except || now - bundle.mtimeMs < options.graceMs) continue;
    await rm(bundle.path, { force: true });
    deleted.push(bundle.path);
  }
  return deleted;
}

// ---- the key's inputs ----

/** Static and dynamic imports, re-exports and requires; `import type` / `export type` are erased, so skipped. */
const IMPORT_PATTERN =
  /(?:^|[^.\w$])(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"\n]+)['"]|(?:^|[^.\w$])(?:import|require)\s*\(\s*['"]([^'"\n]+)['"]\s*\)/gm;
const SCANNED = /\.(?:[cm]?ts|[cm]?js|tsx|jsx)$/;

/**
 * Every file under the workflow-side folders, plus every file outside them that one of them imports by
 * value (followed transitively, so an import through a hole in the fence still keys the bundle), and
 * the packages they import.
 */
async function readWorkflowSources(
  sourceDir: string,
): Promise<{ files: Array<[string, string]>; packagesImported: string[] }> {
  const files = new Map<string, string>();
  const packages = new Set<string>();
  const queue: string[] = [];
  for (const folder of WORKFLOW_SOURCE_DIRS) {
    const root = join(sourceDir, folder);
    const entries = await readdir(root, { recursive: true, withFileTypes: true });
    for (const entry of entries) {
      const path = join(entry.parentPath, entry.name);
      // A symlink counts as the file it points to.
      if (entry.isFile() || (entry.isSymbolicLink() && statSync(path, { throwIfNoEntry: false })?.isFile())) {
        queue.push(path);
      }
    }
  }
  const seen = new Set<string>(queue);
  while (queue.length > 0) {
    const file = queue.shift()!;
    const content = await readFile(file);
    files.set(relative(sourceDir, file).split(sep).join('/'), sha256(content));
    if (!SCANNED.test(file)) continue;
    for (const match of content.toString('utf8').matchAll(IMPORT_PATTERN)) {
      if (match[1] !== undefined) continue; // import type / export type
      const specifier = match[2] ?? match[3];
      if (specifier === undefined) continue;
      if (!specifier.startsWith('.')) {
        const name = packageName(specifier);
        if (name !== null) packages.add(name);
        continue;
      }
      const target = resolveRelative(dirname(file), specifier);
      if (target === null) {
        files.set(
          `unresolved:${relative(sourceDir, resolve(dirname(file), specifier))
            .split(sep)
            .join('/')}`,
          '',
        );
      } else if (!seen.has(target)) {
        seen.add(target);
        queue.push(target);
      }
    }
  }
  return { files: [...files], packagesImported: [...packages].sort(compare) };
}

function resolveRelative(fromDir: string, specifier: string): string | null {
  const base = resolve(fromDir, specifier);
  const candidates = [
    base,
    base.replace(/\.js$/, '.ts'),
    base.replace(/\.mjs$/, '.mts'),
    base.replace(/\.cjs$/, '.cts'),
    `${base}.ts`,
    `${base}.js`,
    join(base, 'index.ts'),
    join(base, 'index.js'),
  ];
  // Synchronous on purpose: a handful of stats, in the order the candidates are tried.
  return candidates.find((candidate) => statSync(candidate, { throwIfNoEntry: false })?.isFile() === true) ?? null;
}

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name`; null for Node built-ins. */
function packageName(specifier: string): string | null {
  if (specifier.startsWith('node:')) return null;
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? '');
  return name === '' ? null : name;
}

/** The version in the nearest node_modules/<name>/package.json above `fromDir` (null when not installed). */
async function installedVersion(fromDir: string, name: string): Promise<string | null> {
  const manifest = findUp(fromDir, join('node_modules', name, 'package.json'));
  if (manifest === null) return null;
  const parsed = JSON.parse(await readFile(manifest, 'utf8')) as { version?: unknown };
  return typeof parsed.version === 'string' ? parsed.version : null;
}

function findUp(fromDir: string, relativePath: string): string | null {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, relativePath);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return null;
  }
}

function sha256(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
