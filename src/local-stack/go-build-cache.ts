// Builds pinned Go binaries into the per-user cache with `go install`, once, under a lock: the Temporal CLI
// for the dev server, and the Temporal server and its SQL schema tool for the cluster tests.
import { mkdir, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { acquireCacheLock } from './cache-lock.js';
import { findOnPath, isExecutableFile } from './find-on-path.js';
import { BuildStepFailed, runBuildStep } from './run-build-step.js';

/** Where the official Go tarball puts `go`, for machines where it is installed but not on PATH. */
const GO_FALLBACKS = ['/usr/local/go/bin/go'];
const BUILD_TIMEOUT_MS = 30 * 60_000;

/** `${DH_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/durable-harness}`: outside any clone, so clean CI clones reuse it. */
export function cacheDir(): string {
  const configured = process.env.DH_CACHE_DIR;
  if (configured !== undefined && configured !== '') return configured;
  const xdg = process.env.XDG_CACHE_HOME;
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), 'durable-harness');
}

export async function findGo(): Promise<string | null> {
  const onPath = await findOnPath('go');
  if (onPath !== null) return onPath;
  const goroot = process.env.GOROOT;
  const candidates = [...(goroot ? [join(goroot, 'bin', 'go')] : []), ...GO_FALLBACKS];
  for (const candidate of candidates) if (await isExecutableFile(candidate)) return candidate;
  return null;
}

export interface GoBuildSpec {
  /** The cache directory the binaries land in (one per pinned version). */
  readonly dir: string;
  /** What is built, for progress and errors ("the Temporal CLI"). */
  readonly what: string;
  /** `module/path@vX.Y.Z` package paths given to one `go install`. */
  readonly packages: readonly string[];
  /** The name `go install` gives each binary (its package's last element) → its name in `dir`. */
  readonly binaries: Readonly<Record<string, string>>;
  /** What to do instead when Go is missing or the build fails (appended to the error). */
  readonly howToGetIt: string;
  readonly log: (line: string) => void;
}

/**
 * Returns `dir`, with every binary of `spec` in it: already there, built by another process while we
 * waited for the lock, or built now into a private staging dir and renamed into place (so nobody ever
 * sees a half-written binary).
 */
export async function buildIntoCache(spec: GoBuildSpec): Promise<string> {
  const targets = Object.values(spec.binaries).map((name) => join(spec.dir, name));
  if (await allExecutable(targets)) return spec.dir;
  const go = await findGo();
  if (go === null) {
    throw new Error(
      `${spec.what} is not in the cache (${spec.dir}) and Go is not installed to build it. ${spec.howToGetIt}`,
    );
  }
  await mkdir(spec.dir, { recursive: true });
  const release = await acquireCacheLock(`${spec.dir}.lock`, { log: spec.log, building: spec.what });
  try {
    if (await allExecutable(targets)) return spec.dir;
    const staging = join(spec.dir, `.staging-${process.pid}`);
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    try {
      spec.log(
        `building ${spec.what} with \`go install ${spec.packages.join(' ')}\` into ${spec.dir} ` +
          '(the first build takes a few minutes; later runs reuse it).',
      );
      const started = Date.now();
      await goInstall(go, staging, spec);
      for (const [built, name] of Object.entries(spec.binaries)) {
        await rename(join(staging, built), join(spec.dir, name));
      }
      spec.log(`built ${spec.what} in ${Math.round((Date.now() - started) / 1000)} s: ${spec.dir}`);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    return spec.dir;
  } finally {
    await release();
  }
}

async function allExecutable(paths: readonly string[]): Promise<boolean> {
  for (const path of paths) if (!(await isExecutableFile(path))) return false;
  return true;
}

async function goInstall(go: string, gobin: string, spec: GoBuildSpec): Promise<void> {
  try {
    await runBuildStep(go, ['install', ...spec.packages], {
      env: { GOBIN: gobin, GO111MODULE: 'on' },
      timeoutMs: BUILD_TIMEOUT_MS,
      onProgress: (minutes) => spec.log(`still building ${spec.what} (${minutes} min)…`),
    });
  } catch (error) {
    if (!(error instanceof BuildStepFailed)) throw error;
    if (error.tail === '') throw new Error(`${error.how}. ${spec.howToGetIt}`, { cause: error });
    throw new Error(
      `\`go install ${spec.packages.join(' ')}\` failed (${error.how}); last output:\n${error.tail}\n` +
        `Fix the build error above. ${spec.howToGetIt}`,
      { cause: error },
    );
  }
}
