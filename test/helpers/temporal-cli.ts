// The real `temporal` CLI binary as a client of the test server (global setup provides it and the server).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { inject } from 'vitest';

const execFileAsync = promisify(execFile);

/** Runs `temporal <args>` against the test server; resolves with its exit code and output (never throws). */
export async function temporal(...args: string[]): Promise<{ code: number; output: string }> {
  const full = [...args, '--address', inject('temporalAddress'), '--namespace', inject('temporalNamespace')];
  try {
    const { stdout, stderr } = await execFileAsync(inject('temporalCliPath'), full, { timeout: 30_000 });
    return { code: 0, output: `${stdout}${stderr}` };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, output: `${failed.stdout}${failed.stderr}` };
  }
}
