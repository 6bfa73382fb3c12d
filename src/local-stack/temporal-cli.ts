// Finds a usable `temporal` CLI binary (for the local dev server): TEMPORAL_CLI_PATH, PATH, the per-user
// cache, or, failing those, builds the pinned version into the cache with `go install` under a lock.
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { findOnPath, isExecutableFile } from './find-on-path.js';
import { buildIntoCache, cacheDir } from './go-build-cache.js';

/** The Temporal CLI version the cache holds and `go install` builds. */
export const TEMPORAL_CLI_VERSION = '1.5.1';
const CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';

export interface ResolveTemporalCliOptions {
  /** Build the pinned CLI with `go install` when no binary is found (default true). */
  readonly install?: boolean;
  /** Progress lines (default: stderr). */
  readonly log?: (line: string) => void;
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
  await buildIntoCache({
    dir: dirname(target),
    what: `the Temporal CLI v${TEMPORAL_CLI_VERSION}`,
    packages: [`${CLI_MODULE}@v${TEMPORAL_CLI_VERSION}`],
    binaries: { temporal: 'temporal' },
    howToGetIt: howToGetIt(),
    log,
  });
  await verifyTemporalCli(target, 'the fresh build');
  return target;
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
