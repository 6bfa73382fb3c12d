// The example project of test/package/packed-example.test.ts as a user would have it: the packed tarball and its
// dependencies installed under examples/support-agent's package.json. Installing every dependency costs a minute
// (and better-sqlite3's compile, when its prebuilt binary cannot be fetched, minutes more), so the installed
// project is kept in the per-user cache, keyed by the dependency set: a warm run only replaces the package
// itself with the new tarball's files and the sources with the example's. One run at a time uses it (a lock).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { acquireCacheLock } from '../../src/local-stack/cache-lock.js';
import { cacheDir } from '../../src/local-stack/go-build-cache.js';

const run = promisify(execFile);
/** Bumped when what the cached project holds changes shape. */
const FORMAT = 1;
const INSTALLED_MARK = '.dh-installed.json';

export interface ExampleProject {
  readonly dir: string;
  /** `cold`: the dependencies were installed now (`npm install <tarball>`); `warm`: from the cache. */
  readonly install: 'cold' | 'warm';
  release(): Promise<void>;
}

export interface PackageManifest {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/** What decides the installed tree: both manifests' dependencies, Node's ABI and the platform. */
function dependencyKey(packed: PackageManifest, example: PackageManifest): string {
  const inputs = {
    format: FORMAT,
    packed: packed.dependencies ?? {},
    example: { ...example.dependencies, ...example.devDependencies, 'durable-harness': null },
    abi: process.versions.modules,
    platform: `${process.platform}-${process.arch}`,
  };
  return createHash('sha256').update(JSON.stringify(inputs)).digest('hex').slice(0, 16);
}

export async function exampleProject(options: {
  readonly example: string;
  readonly tarball: string;
  readonly packedManifest: PackageManifest;
  /** better-sqlite3's built addon to offer prebuild-install as a local prebuild (no compile), when at hand. */
  readonly betterSqlite3?: { readonly version: string; readonly addon: string };
  readonly env: NodeJS.ProcessEnv;
  readonly log: (line: string) => void;
}): Promise<ExampleProject> {
  const manifest = JSON.parse(readFileSync(join(options.example, 'package.json'), 'utf8')) as PackageManifest;
  const root = join(cacheDir(), 'packed-example');
  const key = dependencyKey(options.packedManifest, manifest);
  const dir = join(root, key);
  await mkdir(root, { recursive: true });
  const release = await acquireCacheLock(`${dir}.lock`, { building: 'the packed example project', log: options.log });
  try {
    let install: ExampleProject['install'] = 'warm';
    if (!existsSync(join(dir, INSTALLED_MARK))) {
      install = 'cold';
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { recursive: true });
      await cp(join(options.example, 'package.json'), join(dir, 'package.json'));
      await npmInstall(dir, options);
      await writeFile(join(dir, INSTALLED_MARK), JSON.stringify({ key, at: new Date().toISOString() }));
      await evictOthers(root, key);
    } else {
      // The package itself, as the new tarball has it (npm's tarballs hold one folder, `package/`).
      const installed = join(dir, 'node_modules', 'durable-harness');
      await rm(installed, { recursive: true, force: true });
      await mkdir(installed, { recursive: true });
      await run('tar', ['-xzf', options.tarball, '-C', installed, '--strip-components=1']);
    }
    // The example's files as they are now (the installed manifest named the tarball's path: the example's again).
    for (const entry of await readdir(dir)) {
      if (entry !== 'node_modules' && entry !== INSTALLED_MARK) await rm(join(dir, entry), { recursive: true });
    }
    await cp(options.example, dir, { recursive: true, filter: (path) => !path.includes('node_modules') });
    return { dir, install, release };
  } catch (error) {
    await release();
    throw error;
  }
}

/** `npm install <tarball>` with better-sqlite3's local prebuild on offer (prebuild-install's local prebuilds). */
async function npmInstall(
  dir: string,
  options: Pick<Parameters<typeof exampleProject>[0], 'tarball' | 'betterSqlite3' | 'env' | 'log'>,
): Promise<void> {
  const env: NodeJS.ProcessEnv = { ...options.env };
  const prebuilt = options.betterSqlite3;
  if (prebuilt !== undefined && existsSync(prebuilt.addon)) {
    const prebuilds = join(dir, '.prebuilds');
    await mkdir(join(prebuilds, 'build', 'Release'), { recursive: true });
    await cp(prebuilt.addon, join(prebuilds, 'build', 'Release', 'better_sqlite3.node'));
    // The name prebuild-install asks for: better-sqlite3-v<version>-node-v<abi>-<platform>-<arch>.tar.gz.
    const name = `better-sqlite3-v${prebuilt.version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
    await run('tar', ['-czf', join(prebuilds, name), '-C', prebuilds, 'build']);
    env.npm_config_better_sqlite3_local_prebuilds = prebuilds;
  }
  const started = Date.now();
  options.log(`packed example: installing ${options.tarball} and its dependencies into ${dir}`);
  await run('npm', ['install', '--no-audit', '--no-fund', options.tarball], {
    cwd: dir,
    env,
    maxBuffer: 16 * 1024 * 1024,
    timeout: 15 * 60_000,
  });
  options.log(`packed example: installed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Projects of other dependency sets that no run holds now: they only take space. */
async function evictOthers(root: string, keep: string): Promise<void> {
  for (const entry of await readdir(root)) {
    if (entry === keep || entry.endsWith('.lock') || existsSync(join(root, `${entry}.lock`))) continue;
    await rm(join(root, entry), { recursive: true, force: true });
  }
}
