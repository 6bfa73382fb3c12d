// Schemathesis, the OpenAPI fuzzer the console API test runs against the served document: a pinned version
// from PyPI in a virtual environment in the per-user cache (outside any clone), installed once under a lock.
import { execFile } from 'node:child_process';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { acquireCacheLock } from '../../src/local-stack/cache-lock.js';
import { findOnPath, isExecutableFile } from '../../src/local-stack/find-on-path.js';
import { cacheDir } from '../../src/local-stack/go-build-cache.js';
import { BuildStepFailed, runBuildStep } from '../../src/local-stack/run-build-step.js';

export const SCHEMATHESIS_VERSION = '4.32.5';
/** Set to an existing `schemathesis` (or `st`) executable of that version instead of the cached install. */
export const SCHEMATHESIS_ENV = 'DH_TEST_SCHEMATHESIS';

/** pip resolves and downloads some 40 wheels; far longer than that is a hung index. */
const INSTALL_TIMEOUT_MS = 20 * 60_000;

/** The `schemathesis` executable of the pinned version, installing it into the cache when missing. */
export async function ensureSchemathesis(log: (line: string) => void): Promise<string> {
  const configured = process.env[SCHEMATHESIS_ENV];
  if (configured !== undefined && configured !== '') {
    await verify(configured, SCHEMATHESIS_ENV);
    return configured;
  }
  const dir = join(cacheDir(), `schemathesis-${SCHEMATHESIS_VERSION}`);
  const readyFile = join(dir, 'ready.json');
  const ready = await readReady(readyFile);
  if (ready !== null) return ready;

  await mkdir(cacheDir(), { recursive: true });
  const release = await acquireCacheLock(`${dir}.lock`, {
    building: 'Schemathesis',
    log,
    staleAfterMs: INSTALL_TIMEOUT_MS + 5 * 60_000,
  });
  try {
    const done = await readReady(readyFile);
    if (done !== null) return done;
    const system = (await findOnPath('python3')) ?? (await findOnPath('python'));
    if (system === null) {
      throw new Error(
        'the console API fuzz test needs Python 3 with pip and venv to install Schemathesis, and none is on PATH: ' +
          `on Debian or Ubuntu \`apt-get install python3 python3-venv python3-pip\`; or set ${SCHEMATHESIS_ENV}`,
      );
    }
    // A directory without ready.json is an install that died: start over.
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const venv = join(dir, 'venv');
    log(`Schemathesis not installed yet: installing schemathesis==${SCHEMATHESIS_VERSION} from PyPI into ${venv}`);
    await run(
      system,
      ['-m', 'venv', venv],
      'creating the virtual environment',
      'on Debian or Ubuntu: `apt-get install python3-venv`',
    );
    await run(
      join(venv, 'bin', 'python'),
      [
        '-m',
        'pip',
        'install',
        '--disable-pip-version-check',
        '--progress-bar',
        'off',
        `schemathesis==${SCHEMATHESIS_VERSION}`,
      ],
      `pip install schemathesis==${SCHEMATHESIS_VERSION}`,
      'pip needs to reach the package index (https://pypi.org); ' +
        `or install schemathesis==${SCHEMATHESIS_VERSION} yourself (\`pipx install schemathesis==${SCHEMATHESIS_VERSION}\`) ` +
        `and set ${SCHEMATHESIS_ENV} to its executable`,
    );
    const executable = join(venv, 'bin', 'schemathesis');
    await verify(executable, 'the fresh install');
    const tmp = `${readyFile}.${process.pid}`;
    await writeFile(tmp, JSON.stringify({ executable, version: SCHEMATHESIS_VERSION }, null, 2));
    await rename(tmp, readyFile);
    log(`installed Schemathesis ${SCHEMATHESIS_VERSION}: ${dir}`);
    return executable;
  } finally {
    await release();
  }
}

async function readReady(file: string): Promise<string | null> {
  const text = await readFile(file, 'utf8').catch(() => null);
  if (text === null) return null;
  const { executable } = JSON.parse(text) as { executable: string };
  return (await isExecutableFile(executable)) ? executable : null;
}

/** The executable runs and is the pinned version: another version fuzzes differently and finds other things. */
async function verify(executable: string, source: string): Promise<void> {
  const version = await new Promise<string>((resolve, reject) => {
    execFile(executable, ['--version'], { timeout: 120_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${stderr.trim() || error.message}`, { cause: error }));
      else resolve(stdout.trim());
    });
  }).catch((error: unknown) => {
    throw new Error(
      `Schemathesis from ${source} (${executable}) does not run: ${error instanceof Error ? error.message : String(error)}`,
    );
  });
  if (!version.includes(SCHEMATHESIS_VERSION)) {
    throw new Error(`Schemathesis from ${source} (${executable}) is "${version}", not ${SCHEMATHESIS_VERSION}`);
  }
}

/** One install step; its failure says what ran, how it ended, its last output and how to fix it. */
async function run(file: string, args: readonly string[], what: string, hint: string): Promise<void> {
  try {
    await runBuildStep(file, args, { timeoutMs: INSTALL_TIMEOUT_MS });
  } catch (error) {
    if (!(error instanceof BuildStepFailed)) throw error;
    throw new Error(
      `${what} failed (${error.how})${error.tail !== '' ? `; last output:\n${error.tail}` : ''}\nTo fix it: ${hint}.`,
      { cause: error },
    );
  }
}
