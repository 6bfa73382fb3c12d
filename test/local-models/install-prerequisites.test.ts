// The local-model install stops at once, saying how to fix it, on a machine without what pip needs to
// build llama.cpp: no Python, or no C/C++ compiler (a PATH that holds only what the case needs).
import { mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureLlamaCppPython, MODEL_ENV, PYTHON_ENV } from '../setup/llama-cpp-python.js';

const saved = { ...process.env };
const dirs: string[] = [];
afterEach(() => {
  for (const key of ['PATH', 'DH_CACHE_DIR', PYTHON_ENV, MODEL_ENV]) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** An empty cache and a PATH of one directory holding links to `tools` (found on the real PATH). */
function machineWith(tools: readonly string[]): void {
  const bin = mkdtempSync(join(tmpdir(), 'dh-bin-'));
  const cache = mkdtempSync(join(tmpdir(), 'dh-cache-'));
  dirs.push(bin, cache);
  for (const tool of tools) {
    const found = (saved.PATH ?? '').split(':').map((dir) => join(dir, tool));
    const target = found.find((path) => {
      try {
        return statSync(path).isFile();
      } catch {
        return false;
      }
    });
    if (target === undefined) throw new Error(`this machine has no ${tool} to link`);
    symlinkSync(target, join(bin, tool));
  }
  process.env.PATH = bin;
  process.env.DH_CACHE_DIR = cache;
  delete process.env[PYTHON_ENV];
  delete process.env[MODEL_ENV];
}

describe('installing llama-cpp-python on a machine that lacks what it needs', () => {
  it('without Python: says which packages to install', async () => {
    machineWith([]);
    await expect(ensureLlamaCppPython(() => {})).rejects.toThrow(
      /needs Python 3 with pip and venv .* `apt-get install python3 python3-venv python3-pip`/,
    );
  });

  it('without a C or C++ compiler: names both and says how to get them', async () => {
    machineWith(['python3']);
    await expect(ensureLlamaCppPython(() => {})).rejects.toThrow(
      /needs a C compiler \(cc\) and a C\+\+ compiler \(c\+\+\): on Debian or Ubuntu `apt-get install build-essential cmake`/,
    );
  });

  it('half of an override is refused, naming both variables', async () => {
    process.env[PYTHON_ENV] = '/usr/bin/python3';
    delete process.env[MODEL_ENV];
    await expect(ensureLlamaCppPython(() => {})).rejects.toThrow(`set both ${PYTHON_ENV} and ${MODEL_ENV}`);
  });
});
