// `npm run bench`: runs every benchmark section (or `--only <name>`), prints the figures and writes
// them with their commands to bench/RESULTS.md. Figures are ratios against baselines from the same run.
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import type { BenchSection } from './measure.js';
import { logCoreBench } from './log-core.bench.js';
import { storeAppendBench } from './store-append.bench.js';

const SECTIONS: Record<string, () => Promise<BenchSection[]>> = {
  append: storeAppendBench,
  core: logCoreBench,
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
if (only === undefined) {
  writeFileSync(
    'bench/RESULTS.md',
    header + results.map((s) => `\n## ${s.title}\n\nCommand: \`${s.command}\`\n\n${s.body}\n`).join(''),
  );
  console.log('wrote bench/RESULTS.md');
} else {
  console.log('(--only: bench/RESULTS.md not rewritten; run `npm run bench` for the full file)');
}
