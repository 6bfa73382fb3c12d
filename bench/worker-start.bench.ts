// How long `dh worker` takes to start: spawn of `node bin/dh.mjs worker` (against a dev server) to its
// "worker ready" log line, with the session-workflow bundle from a warm bundle cache (as shipped), from an
// empty one (bundled and stored), and with the cache off (bundled from source at every start, the before).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevServer } from '../src/local-stack/dev-server.js';
import { resolveTemporalCli } from '../src/local-stack/temporal-cli.js';
import { fmt, median, type BenchSection } from './measure.js';
import { percentile } from './harness.bench.js';
import { buildCli } from './cli-start.bench.js';
import { DH_BIN, dhEnv, REPO_ROOT } from './first-token.bench.js';

/** The issue's goal for a start with a warm bundle cache. */
const GOAL_MS = 2_000;
const READY_TIMEOUT_MS = 120_000;
const STOP_GRACE_MS = 15_000;
/** Rebuilds of dist/cli allowed when another edit makes it stale mid-run (the sample is retried after one). */
const MAX_REBUILDS = 5;

type Variant = 'warm' | 'cold' | 'off';

interface WorkerStart {
  /** ms from spawn to the "worker ready" line on its stderr. */
  readonly ms: number;
  /** `compiled` or `tsx` (DH_BIN_TRACE=1). */
  readonly entry: string;
}

/** Spawns `dh worker`, times it to its "worker ready" line, then SIGTERMs it and waits for it to exit. */
function startAndStopWorker(env: NodeJS.ProcessEnv): Promise<WorkerStart> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, [DH_BIN, 'worker'], {
      cwd: REPO_ROOT,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const pid = child.pid ?? -1;
    let log = '';
    let readyAt = Number.NaN;
    let pending = '';
    const signal = (name: NodeJS.Signals) => {
      try {
        process.kill(-pid, name);
      } catch {
        // already gone
      }
    };
    let killTimer: NodeJS.Timeout | undefined;
    const onLine = (line: string) => {
      if (!Number.isNaN(readyAt) || !line.startsWith('{')) return;
      try {
        if ((JSON.parse(line) as { msg?: unknown }).msg !== 'worker ready') return;
      } catch {
        return;
      }
      readyAt = performance.now();
      signal('SIGTERM');
      killTimer = setTimeout(() => signal('SIGKILL'), STOP_GRACE_MS);
    };
    child.stdout.setEncoding('utf8').on('data', (c: string) => (log += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      log += c;
      pending += c;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) onLine(line);
    });
    const readyTimer = setTimeout(() => {
      if (Number.isNaN(readyAt)) signal('SIGKILL');
    }, READY_TIMEOUT_MS);
    child.once('error', reject);
    child.once('close', (code, sig) => {
      clearTimeout(readyTimer);
      clearTimeout(killTimer);
      if (Number.isNaN(readyAt)) {
        reject(new Error(`dh worker exited (${code ?? sig}) before "worker ready":\n${log.slice(-2_000)}`));
        return;
      }
      if (sig === 'SIGKILL') {
        reject(new Error(`dh worker did not exit within ${STOP_GRACE_MS} ms of SIGTERM:\n${log.slice(-2_000)}`));
        return;
      }
      resolve({ ms: readyAt - start, entry: /^dh-bin: (compiled|tsx)/m.exec(log)?.[1] ?? '?' });
    });
  });
}

/** The bundle files in a DH_CACHE_DIR, with their mtimes. */
function bundles(cacheDir: string): Map<string, number> {
  const dir = join(cacheDir, 'workflow-bundles');
  if (!existsSync(dir)) return new Map();
  return new Map(
    readdirSync(dir)
      .filter((name) => name.endsWith('.js') && !name.startsWith('.'))
      .map((name) => [name, statSync(join(dir, name)).mtimeMs]),
  );
}

export async function workerStartBench(
  rounds = Number(process.env.DH_BENCH_WORKER_START_ROUNDS ?? 5),
): Promise<BenchSection[]> {
  const dir = mkdtempSync(join(tmpdir(), 'dh-bench-worker-start-'));
  const home = join(dir, 'home');
  const warmCache = join(dir, 'cache-warm');
  mkdirSync(home);
  mkdirSync(warmCache);
  // Resolved with the developer's cache dir, before any worker gets a temp one. A worker with TEMPORAL_ADDRESS
  // set never looks for the CLI (no local stack to start); TEMPORAL_CLI_PATH is passed all the same, so a
  // fresh DH_CACHE_DIR could never send one looking for (or building) a `temporal` binary.
  const cliPath = await resolveTemporalCli();
  const server = await startDevServer({ cliPath });
  // As the first-token bench runs its worker (scripted provider settings; nothing is called at start, so the
  // URL is an unused loopback port), at the default log level (its "worker ready" line is info), no
  // DH_WORKFLOW_BUNDLE, NODE_OPTIONS dropped.
  const base = dhEnv('http://127.0.0.1:9/v1', {
    DH_HOME: home,
    DH_LOG_LEVEL: 'info',
    DH_BIN_TRACE: '1',
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: server.namespace,
    TEMPORAL_CLI_PATH: cliPath,
    DH_TASK_QUEUE: `bench-worker-start-${process.pid}`,
  });
  delete base.NODE_OPTIONS;
  let rebuilds = 0;
  let fresh = 0;
  /** Warm starts that found their bundle missing (an edit elsewhere changed the key): re-warmed, the sample retried. */
  let warmMisses = 0;
  const results: Record<Variant, number[]> = { warm: [], cold: [], off: [] };

  /** One start with the compiled CLI (rebuilt and retried if another edit made it stale). */
  async function start(env: NodeJS.ProcessEnv): Promise<number> {
    for (;;) {
      const run = await startAndStopWorker(env);
      if (run.entry === 'compiled') return run.ms;
      if (run.entry === 'tsx' && rebuilds < MAX_REBUILDS) {
        rebuilds++;
        buildCli();
        continue;
      }
      throw new Error(`bin/dh.mjs ran "${run.entry}" for \`dh worker\` instead of the compiled CLI (DH_BIN_TRACE)`);
    }
  }
  const freshCacheDir = () => join(dir, `cache-${++fresh}`);

  const measures: Record<Variant, () => Promise<number>> = {
    warm: async () => {
      for (let attempt = 0; ; attempt++) {
        const before = bundles(warmCache);
        const ms = await start({ ...base, DH_CACHE_DIR: warmCache });
        const after = bundles(warmCache);
        // A hit touches its bundle's mtime and writes nothing new.
        const hit = after.size === before.size && [...after.keys()].every((name) => before.has(name));
        if (hit) return ms;
        if (attempt >= 2) throw new Error('the warm bundle cache missed three times in a row');
        warmMisses++;
      }
    },
    cold: async () => {
      const cacheDir = freshCacheDir();
      mkdirSync(cacheDir);
      const ms = await start({ ...base, DH_CACHE_DIR: cacheDir });
      // Bundled and stored (or, if a source changed while it bundled, used from memory): never a hit.
      rmSync(cacheDir, { recursive: true, force: true });
      return ms;
    },
    off: async () => {
      const cacheDir = freshCacheDir();
      mkdirSync(cacheDir);
      const ms = await start({ ...base, DH_CACHE_DIR: cacheDir, DH_WORKFLOW_BUNDLE_CACHE: 'off' });
      const written = bundles(cacheDir).size;
      rmSync(cacheDir, { recursive: true, force: true });
      if (written > 0) throw new Error('DH_WORKFLOW_BUNDLE_CACHE=off wrote a bundle to the cache');
      return ms;
    },
  };
  const order: Variant[] = ['warm', 'cold', 'off'];
  let prewarmMs = Number.NaN;
  const buildStart = performance.now();
  buildCli();
  const buildMs = performance.now() - buildStart;
  try {
    // Pre-warm (not counted): one start fills the warm cache (and the OS page cache for all variants).
    prewarmMs = await start({ ...base, DH_CACHE_DIR: warmCache });
    if (bundles(warmCache).size !== 1) throw new Error('the pre-warm start left no bundle in the cache');
    for (let r = 0; r < rounds; r++) {
      // Interleaved, the order rotated each round, so the machine's noise hits every variant alike.
      for (let k = 0; k < order.length; k++) {
        const variant = order[(r + k) % order.length] ?? 'warm';
        results[variant].push(await measures[variant]());
      }
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const m = (v: Variant) => median(results[v]);
  const row = (label: string, v: Variant) =>
    `| ${label} | ${fmt(m(v))} ms | ${fmt(percentile(results[v], 90))} ms | ${fmt(Math.min(...results[v]))} ms | ${fmt(m(v) / m('off'))}× |`;
  return [
    {
      title: 'Worker start',
      command: 'npm run bench -- --only worker-start',
      body: [
        'How long `dh worker` takes to start: spawn of `node bin/dh.mjs worker` to its `worker ready` log line (stderr),',
        'against a dev server (`startDevServer`; TEMPORAL_ADDRESS set, so no local stack), with the scripted-provider',
        'settings of the first-token bench, a temp DH_HOME, `DH_SHELL_SANDBOX=none`, no DH_WORKFLOW_BUNDLE; each worker',
        'is stopped with SIGTERM and waited for before the next start. The bin runs the compiled CLI (`node',
        `scripts/build-cli.mjs\` at the section start, ${fmt(buildMs)} ms; every start checked by \`DH_BIN_TRACE=1\`${rebuilds > 0 ? `; rebuilt ${rebuilds} time(s) after edits elsewhere made it stale, the sample retried` : ''}).`,
        'Variants: "warm" — the bundle cache as shipped, a temp DH_CACHE_DIR filled by one start before the rounds',
        `(${fmt(prewarmMs)} ms, not counted), each start checked to have hit it${warmMisses > 0 ? ` (${warmMisses} start(s) missed after an edit elsewhere changed the key: retried)` : ''};`,
        '"cold" — a fresh empty DH_CACHE_DIR each start (bundles and stores); "off" — `DH_WORKFLOW_BUNDLE_CACHE=off`,',
        'bundled from source at every start (the behaviour before the cache; checked to write no bundle).',
        `${rounds} rounds, the three interleaved (order rotated), medians, p90 and min.`,
        '',
        '| worker start | median | p90 | min | ÷ off (before) |',
        '| --- | ---: | ---: | ---: | ---: |',
        row('bundle cache warm', 'warm'),
        row('bundle cache cold (empty DH_CACHE_DIR)', 'cold'),
        row('`DH_WORKFLOW_BUNDLE_CACHE=off` (before)', 'off'),
        '',
        `Goal warm ≤ ${fmt(GOAL_MS)} ms: **${m('warm') <= GOAL_MS ? 'met' : 'missed'}** (${fmt(m('warm'))} ms; ${fmt(m('off') - m('warm'))} ms less than bundling at`,
        `every start, ${fmt(m('off') / m('warm'))}× faster).`,
      ].join('\n'),
    },
  ];
}
