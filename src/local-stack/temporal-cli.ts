// Finds a usable `temporal` CLI binary (for the local dev server): TEMPORAL_CLI_PATH, PATH, the per-user
// cache, or, failing those, builds the pinned version into the cache with `go install` under a lock.
import { execFile } from 'node:child_process';
import { mkdir, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { acquireCacheLock } from './cache-lock.js';
import { findOnPath, isExecutableFile } from './find-on-path.js';
import { BuildStepFailed, runBuildStep } from './run-build-step.js';

/** The Temporal CLI version the cache holds and `go install` builds. */
export const TEMPORAL_CLI_VERSION = '1.5.1';
const CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';
/** Where the official Go tarball puts `go`, for machines where it is installed but not on PATH. */
const GO_FALLBACKS = ['/usr/local/go/bin/go'];
const BUILD_TIMEOUT_MS = 30 * 60_000;

export interface ResolveTemporalCliOptions {
  /** Build the pinned CLI with `go install` when no binary is found (default true). */
  readonly install?: boolean;
  /** Progress lines (default: stderr). */
  readonly log?: (line: string) => void;
}

/** `${DH_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/durable-harness}`: outside any clone, so clean CI clones reuse it. */
export function cacheDir(): string {
  const configured = process.env.DH_CACHE_DIR;
  if (configured !== undefined && configured !== '') return configured;
  const xdg = process.env.XDG_CACHE_HOME;
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), 'durable-harness');
}

/** Where the pinned CLI lives (or will be built) in the cache. */
export function cachedTemporalCliPath(): string {
  return join(cacheDir(), `temporal-${TEMPORAL_CLI_VERSION}`, 'temporal');
}

export async function resolveTemporalCli(options: ResolveTemporalCliOptions = {}): Promise<string> {
  const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));

  const configured = process.env.TEMPORAL_CLI_PATH;
  if (configured !== undefined && configured !== '') {
    if (!(await isExecutableFile(configured))) {
      throw new Error(
        `TEMPORAL_CLI_PATH is set to ${JSON.stringify(configured)}, but there is no executable file there. ` +
          'Point TEMPORAL_CLI_PATH at a `temporal` CLI binary, or unset it to use the one on PATH or the cached build.',
      );
    }
    await verifyTemporalCli(configured, 'TEMPORAL_CLI_PATH');
    return configured;
  }

  const onPath = await findOnPath('temporal');
  if (onPath !== null) {
    try {
      await verifyTemporalCli(onPath, 'PATH');
      return onPath;
    } catch (error) {
      // A broken binary on PATH should not block the pinned build; say why it was passed over.
      log(`ignoring ${onPath}: ${errorMessage(error)}`);
    }
  }

  const cached = cachedTemporalCliPath();
  if (await isExecutableFile(cached)) {
    await verifyTemporalCli(cached, 'the cache');
    return cached;
  }

  if (options.install === false) {
    throw new Error(
      `No Temporal CLI found: TEMPORAL_CLI_PATH is unset, there is no \`temporal\` on PATH and none at ${cached}. ` +
        howToGetIt(),
    );
  }
  return installPinnedCli(cached, log);
}

/** Runs `temporal --version` and returns its output; throws if the binary does not run as the CLI. */
export async function verifyTemporalCli(path: string, source: string): Promise<string> {
  let output: string;
  try {
    output = await run(path, ['--version'], 30_000);
  } catch (error) {
    throw new Error(`the Temporal CLI from ${source} (${path}) does not run: ${errorMessage(error)}`, {
      cause: error,
    });
  }
  if (!/temporal version/i.test(output)) {
    throw new Error(
      `the Temporal CLI from ${source} (${path}) printed ${JSON.stringify(output.trim().slice(0, 200))} ` +
        'for --version, not "temporal version ...": is it the Temporal CLI?',
    );
  }
  return output.trim();
}

async function installPinnedCli(target: string, log: (line: string) => void): Promise<string> {
  const go = await findGo();
  if (go === null) {
    throw new Error(
      `No Temporal CLI found (TEMPORAL_CLI_PATH is unset, no \`temporal\` on PATH, none at ${target}), and Go ` +
        `is not installed to build the pinned v${TEMPORAL_CLI_VERSION}. ${howToGetIt()}`,
    );
  }
  const versionDir = dirname(target);
  await mkdir(versionDir, { recursive: true });
  const release = await acquireCacheLock(`${versionDir}.lock`, { log, building: 'the Temporal CLI' });
  try {
    // Another process may have finished the build while we waited for the lock.
    if (await isExecutableFile(target)) {
      await verifyTemporalCli(target, 'the cache');
      return target;
    }
    // Build into a private dir and rename into place, so nobody ever sees a half-written binary.
    const staging = join(versionDir, `.staging-${process.pid}`);
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    try {
      log(
        `Temporal CLI not found: building the pinned Temporal CLI v${TEMPORAL_CLI_VERSION} with ` +
          `\`go install ${CLI_MODULE}@v${TEMPORAL_CLI_VERSION}\` into ${versionDir} ` +
          '(the first build takes a few minutes; later runs reuse it).',
      );
      const started = Date.now();
      await goInstall(go, staging);
      await rename(join(staging, 'temporal'), target);
      log(`built the Temporal CLI in ${Math.round((Date.now() - started) / 1000)} s: ${target}`);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    await verifyTemporalCli(target, 'the fresh build');
    return target;
  } finally {
    await release();
  }
}

async function goInstall(go: string, gobin: string): Promise<void> {
  try {
    await runBuildStep(go, ['install', `${CLI_MODULE}@v${TEMPORAL_CLI_VERSION}`], {
      env: { GOBIN: gobin, GO111MODULE: 'on' },
      timeoutMs: BUILD_TIMEOUT_MS,
    });
  } catch (error) {
    if (!(error instanceof BuildStepFailed)) throw error;
    if (error.tail === '') throw new Error(error.how, { cause: error });
    throw new Error(
      `\`go install ${CLI_MODULE}@v${TEMPORAL_CLI_VERSION}\` failed (${error.how}); ` +
        `last output:\n${error.tail}\nFix the build error above, or install the Temporal CLI any usual way ` +
        '(https://docs.temporal.io/cli) and put `temporal` on PATH or set TEMPORAL_CLI_PATH to the binary.',
      { cause: error },
    );
  }
}

async function findGo(): Promise<string | null> {
  const onPath = await findOnPath('go');
  if (onPath !== null) return onPath;
  const goroot = process.env.GOROOT;
  const candidates = [...(goroot ? [join(goroot, 'bin', 'go')] : []), ...GO_FALLBACKS];
  for (const candidate of candidates) if (await isExecutableFile(candidate)) return candidate;
  return null;
}

function howToGetIt(): string {
  return (
    `To fix it: install Go (https://go.dev/doc/install; ${CLI_MODULE} v${TEMPORAL_CLI_VERSION} needs Go 1.25 or a ` +
    'Go that can fetch that toolchain) and rerun, or install the Temporal CLI any usual way ' +
    '(https://docs.temporal.io/cli) and put `temporal` on PATH or set TEMPORAL_CLI_PATH to the binary.'
  );
}

function run(file: string, args: readonly string[], timeout: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${stderr.trim() || stdout.trim() || error.message}`, { cause: error }));
      else resolve(stdout + stderr);
    });
  });
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
