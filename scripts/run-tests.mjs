#!/usr/bin/env node
// Runs the suite with vitest (every project, or those named by `--project`; other arguments pass through) and
// ends with the plain line CI reads: `N passed, N failed[, N skipped]`.
// Exit code: vitest's, or 1 when the summary cannot be read (never a silent green).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'dh-test-report-'));
const report = join(dir, 'report.json');
const args = [
  'vitest',
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${report}`,
  ...process.argv.slice(2),
];
const run = spawnSync('npx', args, { stdio: 'inherit' });

let summary;
try {
  const json = JSON.parse(readFileSync(report, 'utf8'));
  const skipped = (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0);
  // A file that failed to load or in a hook has no failing test of its own: count it once.
  const brokenFiles = (json.testResults ?? []).filter(
    (file) => file.status === 'failed' && !(file.assertionResults ?? []).some((t) => t.status === 'failed'),
  ).length;
  const failed = json.numFailedTests + brokenFiles;
  summary = `${json.numPassedTests} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`;
  if (json.numTotalTests === 0) {
    console.error('no tests ran');
    process.exitCode = 1;
  }
} catch (error) {
  console.error(`could not read the vitest report: ${error instanceof Error ? error.message : String(error)}`);
  summary = '0 passed, 1 failed';
  process.exitCode = 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(summary);
if (!process.exitCode) process.exitCode = run.status ?? 1;
