// The chaos harness: `npm run chaos [-- --trials N --seed S --concurrency C --no-write --only I,J]`. Each trial
// runs a scripted multi-turn, tool-using session (some delegating to subagents) fed from several processes and
// kills something at a chosen moment (a worker at each failpoint, around a continue-as-new, at a random moment;
// the Temporal dev server; one of two workers sharing PostgreSQL), then checks the logs. Prints the tables and
// writes them to RELIABILITY.md (not with --only, which re-runs chosen trials of the plan).
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { bundleSessionWorkflows } from '../src/local-stack/bundle-workflows.js';
import { resolveTemporalCli } from '../src/local-stack/temporal-cli.js';
import { formatProblems, formatSummary, runChaos, writeChaosResults } from '../test/helpers/chaos/chaos-run.js';
import { startPostgres } from '../test/setup/postgres.js';

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '100' },
    seed: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '4' },
    'no-write': { type: 'boolean', default: false },
    only: { type: 'string' },
    verbose: { type: 'boolean', default: false },
  },
});
const trials = Number(values.trials);
const seed = Number(values.seed);
const concurrency = Number(values.concurrency);
const only = values.only?.split(',').map(Number);
if (
  ![trials, seed, concurrency, ...(only ?? [])].every((n) => Number.isInteger(n) && n >= 0) ||
  trials < 1 ||
  concurrency < 1 ||
  (only !== undefined && only.some((i) => i >= trials))
) {
  console.error(
    'usage: npm run chaos -- [--trials N>=1] [--seed S>=0] [--concurrency C>=1] [--only I,J (each < N)] [--no-write] [--verbose]',
  );
  process.exit(2);
}
const command = `npm run chaos -- --trials ${trials} --seed ${seed} --concurrency ${concurrency}${only ? ` --only ${only.join(',')}` : ''}`;
const started = Date.now();
const stamp = () => `${String(Math.round((Date.now() - started) / 1000)).padStart(5)} s`;

console.log(
  `chaos: ${trials} trials, seed ${seed}, ${concurrency} at a time; starting PostgreSQL and bundling the workflow`,
);
const [cliPath, postgres, bundle] = await Promise.all([
  resolveTemporalCli(),
  startPostgres(),
  bundleSessionWorkflows(),
]);
let exitCode = 1;
try {
  let done = 0;
  const summary = await runChaos(
    {
      cliPath,
      workflowBundlePath: bundle.codePath,
      postgresUrl: postgres.url,
      runId: `${Date.now().toString(36)}${process.pid.toString(36)}`,
      log: (line) => {
        const finished = /\] (done in|ERROR)/.test(line);
        if (finished) done++;
        if (values.verbose || finished || line.includes('PROBLEM'))
          console.log(`${stamp()}${finished ? ` ${done}/${only?.length ?? trials}` : ''} ${line}`);
      },
    },
    { trials, seed, concurrency, ...(only ? { only } : {}) },
  );
  const table = formatSummary(summary, command);
  console.log(`\n${table}\n`);
  const problems = formatProblems(summary);
  if (problems.length > 0) console.log(`Problems:\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
  if (!summary.audited) console.log('The audit did not run: src/audit/audit-session.ts is not there.');
  if (!values['no-write'] && only === undefined) {
    const file = join(dirname(fileURLToPath(import.meta.url)), '..', 'RELIABILITY.md');
    writeChaosResults(file, table);
    console.log(`written to ${file}`);
  }
  exitCode = summary.ok ? 0 : 1;
} finally {
  await postgres.stop();
  await rm(dirname(bundle.codePath), { recursive: true, force: true });
}
process.exit(exitCode);
