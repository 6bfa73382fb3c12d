// `npm run bench`: runs every benchmark section (or `--only <name>`), prints the figures and writes
// them with their commands to bench/RESULTS.md. Figures are ratios against baselines from the same run.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import type { BenchSection } from './measure.js';
import { logCoreBench } from './log-core.bench.js';
import { storeAppendBench } from './store-append.bench.js';
import { longSessionBench } from './long-session.bench.js';
import { overheadBench } from './overhead.bench.js';
import { throughputBench } from './throughput.bench.js';
import { idleBench } from './idle.bench.js';
import { costBench } from './cost.bench.js';
import { cacheBench } from './cache.bench.js';
import { historyBench } from './history.bench.js';
import { firstTokenBench } from './first-token.bench.js';
import { dhRunStepsBench } from './dh-run-steps.bench.js';
import { cliStartBench } from './cli-start.bench.js';
import { workerStartBench } from './worker-start.bench.js';
import { clusterBench } from './cluster.bench.js';
import { ackBench } from './ack.bench.js';
import { fleetBench } from './fleet.bench.js';
import { evalBench } from './eval.bench.js';
import { streamBench } from './stream.bench.js';

const SECTIONS: Record<string, () => Promise<BenchSection[]>> = {
  append: storeAppendBench,
  core: logCoreBench,
  long: () => longSessionBench(),
  overhead: () => overheadBench(),
  throughput: () => throughputBench(),
  idle: () => idleBench(),
  cost: () => costBench(),
  cache: () => cacheBench(),
  history: () => historyBench(),
  'first-token': () => firstTokenBench(),
  'dh-run': () => dhRunStepsBench(),
  'cli-start': () => cliStartBench(),
  'worker-start': () => workerStartBench(),
  cluster: () => clusterBench(),
  ack: () => ackBench(),
  fleet: () => fleetBench(),
  eval: () => evalBench(),
  stream: () => streamBench(),
};

const onlyIndex = process.argv.indexOf('--only');
const only = onlyIndex >= 0 ? process.argv[onlyIndex + 1] : undefined;
if (only !== undefined && !(only in SECTIONS)) {
  console.error(`unknown section "${only}"; choose one of: ${Object.keys(SECTIONS).join(', ')}`);
  process.exit(2);
}

const results: BenchSection[] = [];
for (const [name, run] of Object.entries(SECTIONS)) {
  if (only !== undefined && name !== only) continue;
  console.log(`running ${name}...`);
  for (const section of await run()) {
    results.push(section);
    console.log(`\n## ${section.title}\n\n${section.body}\n`);
  }
}

const header = [
  '# Benchmark results',
  '',
  `Written by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}; ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}),`,
  `Node ${process.version}. The machine is shared and noisy: every figure is a median, and every ratio is`,
  'against a baseline measured in the same run. Each section names the command that produced it.',
  '',
].join('\n');
// Sections are replaced in place (matched by title) and new ones appended, so a run keeps the order of the
// file and the sections it did not produce (another `--only`, or a variant such as the capped idle run).
const render = (s: BenchSection): string => `\n## ${s.title}\n\nCommand: \`${s.command}\`\n\n${s.body}\n`;
const fresh = new Map(results.map((r) => [r.title, r]));
const existing = existsSync('bench/RESULTS.md') ? readFileSync('bench/RESULTS.md', 'utf8') : '';
const merged = existing
  .split(/\n(?=## )/)
  .slice(1)
  .map((section) => {
    const title = /^## (.*)\n/.exec(section)?.[1] ?? '';
    const replacement = fresh.get(title);
    fresh.delete(title);
    return replacement ? render(replacement) : `\n${section.trimEnd()}\n`;
  });
writeFileSync('bench/RESULTS.md', header + merged.join('') + [...fresh.values()].map(render).join(''));
console.log(
  `wrote bench/RESULTS.md${only !== undefined ? ` (section${results.length === 1 ? '' : 's'} of --only ${only})` : ''}`,
);
