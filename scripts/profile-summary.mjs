// Summarizes V8 `.cpuprofile` files (from `node --cpu-prof`) as self time by area and by function, cut to
// a window of hrtime microseconds when one is given (scripts/profile-steps.ts prints it).
// Run: node scripts/profile-summary.mjs <dir> [fromUs toUs] [--steps N] [--top K]
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const value = args[i + 1];
  args.splice(i, 2);
  return Number(value);
};
const steps = option('--steps', 0);
const top = option('--top', 25);
const [dir, from, to] = args;
const window = from !== undefined ? [Number(from), Number(to)] : undefined;

/** Where a frame's code lives: a package, a source folder, the workflow bundle, or the runtime. */
function area(url, name) {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const pkg = /node_modules\/(@[^/]+\/[^/]+|[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (/workflow-bundle/.test(url)) return 'workflow bundle';
  const src = /\/(src\/[^/]+|bench|scripts)\//.exec(url);
  if (src) return src[1];
  if (url.startsWith('node:')) return 'node internals';
  return url.slice(0, 40);
}

for (const file of readdirSync(dir)
  .filter((f) => f.endsWith('.cpuprofile'))
  .sort()) {
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  const self = new Map();
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (window && (t < window[0] || t > window[1])) continue;
    const id = profile.samples[i];
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
  }
  const byArea = new Map();
  const byFunction = new Map();
  let busy = 0;
  for (const node of profile.nodes) {
    const us = self.get(node.id) ?? 0;
    if (us === 0) continue;
    const { url, functionName, lineNumber } = node.callFrame;
    const name = functionName || '(anonymous)';
    if (name === '(idle)') continue;
    busy += us;
    const a = area(url, name);
    byArea.set(a, (byArea.get(a) ?? 0) + us);
    const where = url.replace(/^.*node_modules\//, '').replace(/^.*\/(src|bench|scripts)\//, '$1/');
    const key = `${name} ${where}:${lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  }
  if (busy < 50_000) continue; // threads that did nothing in the window
  const ms = (us) => (steps > 0 ? `${(us / 1000 / steps).toFixed(2)} ms/step` : `${(us / 1000).toFixed(0)} ms`);
  console.log(`\n${file}: busy ${ms(busy)}`);
  for (const [k, v] of [...byArea].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`  ${ms(v).padStart(16)} ${((100 * v) / busy).toFixed(1).padStart(5)}%  ${k}`);
  console.log('  -- functions');
  for (const [k, v] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`  ${ms(v).padStart(16)} ${((100 * v) / busy).toFixed(1).padStart(5)}%  ${k}`);
}
