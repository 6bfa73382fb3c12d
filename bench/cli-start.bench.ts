// How long a `dh` command takes to start: `node bin/dh.mjs --help` to its exit, and `node bin/dh.mjs steer`
// to the moment it opens its TCP connection to Temporal — running the compiled CLI (dist/cli, as shipped)
// against running the TypeScript sources through tsx (how every command started before the build), with a
// bare `node -e 0` as the floor.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmt, median, type BenchSection } from './measure.js';
import { percentile } from './harness.bench.js';
import { DH_BIN, dhEnv, REPO_ROOT } from './first-token.bench.js';

/** The issue's goal for both commands, compiled. */
const GOAL_MS = 300;
/** Rebuilds allowed when another edit makes the build stale mid-run (each sample of the compiled variant is retried after one). */
const MAX_REBUILDS = 5;

type Entry = 'compiled' | 'tsx';

interface Sample {
  /** ms from spawn to the measured moment (exit, or the first connection). */
  readonly ms: number;
  /** Which entry bin/dh.mjs took (its DH_BIN_TRACE line); `node` for the floor. */
  readonly entry: Entry | 'node' | '?';
}

/** `node scripts/build-cli.mjs`: dist/cli matches the sources afterwards. */
export function buildCli(): void {
  execFileSync(process.execPath, [join(REPO_ROOT, 'scripts', 'build-cli.mjs')], { cwd: REPO_ROOT, stdio: 'pipe' });
}

/** Spawns `node <args>` and times it to its exit (it must exit 0). */
function timeToExit(args: readonly string[], env: NodeJS.ProcessEnv): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    child.once('close', (code) => {
      const ms = performance.now() - start;
      if (code !== 0) reject(new Error(`node ${args.join(' ')} exited ${code}:\n${stderr.slice(-2_000)}`));
      else resolve({ ms, entry: entryOf(args, stderr) });
    });
  });
}

/** A TCP listener standing in for Temporal: it records when each connection arrives and drops it. */
async function startListener(): Promise<{ address: string; next(): Promise<number>; close(): Promise<void> }> {
  let waiting: ((at: number) => void) | null = null;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    const at = performance.now();
    sockets.add(socket);
    socket.on('error', () => undefined).once('close', () => sockets.delete(socket));
    socket.destroy();
    const resolve = waiting;
    waiting = null;
    resolve?.(at);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    address: `127.0.0.1:${port}`,
    next: () => new Promise<number>((resolve) => (waiting = resolve)),
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Spawns `dh steer`, times it to its first connection to the listener, then kills it. */
function timeToConnect(
  listener: Awaited<ReturnType<typeof startListener>>,
  env: NodeJS.ProcessEnv,
  timeoutMs = 30_000,
): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const connected = listener.next();
    const start = performance.now();
    const child = spawn(process.execPath, [DH_BIN, 'steer', 'bench-cli-start', 'hi'], {
      cwd: REPO_ROOT,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    let at = Number.NaN;
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    void connected.then((t) => {
      at = t;
      child.kill('SIGKILL');
    });
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      if (Number.isNaN(at)) {
        reject(
          new Error(`dh steer exited ${code} without connecting to ${listener.address}:\n${stderr.slice(-2_000)}`),
        );
      } else resolve({ ms: at - start, entry: entryOf([DH_BIN], stderr) });
    });
  });
}

function entryOf(args: readonly string[], stderr: string): Sample['entry'] {
  if (args[0] !== DH_BIN) return 'node';
  const entry = /^dh-bin: (compiled|tsx)/m.exec(stderr)?.[1];
  return entry === 'compiled' || entry === 'tsx' ? entry : '?';
}

export async function cliStartBench(
  rounds = Number(process.env.DH_BENCH_CLI_START_ROUNDS ?? 15),
): Promise<BenchSection[]> {
  const dir = mkdtempSync(join(tmpdir(), 'dh-bench-cli-start-'));
  const home = join(dir, 'home');
  mkdirSync(home);
  const listener = await startListener();
  // The developer's shell minus dh's, Temporal's and the provider's variables (and NODE_OPTIONS); the provider
  // URL is an unused loopback port (neither command calls it); Temporal is the listener.
  const base = dhEnv('http://127.0.0.1:9/v1', { DH_HOME: home, TEMPORAL_ADDRESS: listener.address, DH_BIN_TRACE: '1' });
  delete base.NODE_OPTIONS;
  const envOf: Record<Entry, NodeJS.ProcessEnv> = {
    compiled: base,
    tsx: { ...base, DH_BIN_FROM_SOURCE: '1' },
  };
  let rebuilds = 0;
  const buildStart = performance.now();
  buildCli();
  const buildMs = performance.now() - buildStart;

  /** One sample of a dh variant, checked to have taken the variant's entry (a stale build is rebuilt and the sample retried). */
  async function dhSample(entry: Entry, run: (env: NodeJS.ProcessEnv) => Promise<Sample>): Promise<Sample> {
    for (;;) {
      const sample = await run(envOf[entry]);
      if (sample.entry === entry) return sample;
      if (entry === 'compiled' && sample.entry === 'tsx' && rebuilds < MAX_REBUILDS) {
        rebuilds++;
        buildCli();
        continue;
      }
      throw new Error(`bin/dh.mjs ran "${sample.entry}" for the ${entry} variant (DH_BIN_TRACE)`);
    }
  }

  const results: Record<string, number[]> = {
    floor: [],
    helpCompiled: [],
    helpTsx: [],
    steerCompiled: [],
    steerTsx: [],
  };
  const measures: [keyof typeof results, () => Promise<Sample>][] = [
    ['floor', () => timeToExit(['-e', '0'], base)],
    ['helpCompiled', () => dhSample('compiled', (env) => timeToExit([DH_BIN, '--help'], env))],
    ['helpTsx', () => dhSample('tsx', (env) => timeToExit([DH_BIN, '--help'], env))],
    ['steerCompiled', () => dhSample('compiled', (env) => timeToConnect(listener, env))],
    ['steerTsx', () => dhSample('tsx', (env) => timeToConnect(listener, env))],
  ];
  try {
    // Warm-up (not counted): one of each (the first steer also creates DH_HOME's files).
    for (const [, measure] of measures) await measure();
    for (let r = 0; r < rounds; r++) {
      // Interleaved, the order rotated each round, so the machine's noise hits every variant alike.
      for (let k = 0; k < measures.length; k++) {
        const [name, measure] = measures[(r + k) % measures.length] ?? [];
        if (name && measure) results[name]?.push((await measure()).ms);
      }
    }
  } finally {
    await listener.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const m = (name: string) => median(results[name] ?? []);
  const row = (label: string, name: string, vs: string | null) =>
    `| ${label} | ${fmt(m(name))} ms | ${fmt(percentile(results[name] ?? [], 90))} ms | ${fmt(m(name) / m('floor'))}× | ${
      vs === null ? '' : `${fmt(m(vs) / m(name))}×`
    } |`;
  const verdict = (name: string) => `**${m(name) <= GOAL_MS ? 'met' : 'missed'}** (${fmt(m(name))} ms)`;

  return [
    {
      title: 'CLI start',
      command: 'npm run bench -- --only cli-start',
      body: [
        'How long a `dh` command takes to start. `--help`: spawn of `node bin/dh.mjs --help` to its exit. `steer`:',
        'spawn of `node bin/dh.mjs steer <session> hi` to the moment it opens its TCP connection to Temporal',
        '(TEMPORAL_ADDRESS is a `net.createServer` listener of the benchmark; the time of its first `connection` event,',
        'then the child is killed), i.e. process start, config, the command and the Temporal client loaded. Two variants:',
        '"compiled" is the bin as shipped, running dist/cli (`node scripts/build-cli.mjs` at the section start,',
        `${fmt(buildMs)} ms this run); "tsx" is the same sources through tsx, as every command started before the build`,
        "(`DH_BIN_FROM_SOURCE=1`; tsx's transform cache warm after the warm-up). It keeps the lazy loading of each command's",
        'modules that came with the build (commit 8695978), so it isolates the build alone: the tree before that commit',
        '(main.ts loading every command group through tsx) started slower still, ~0.9 s for `--help` in its message.',
        'Every run is checked by `DH_BIN_TRACE=1` to have taken its variant’s entry' +
          (rebuilds > 0
            ? ` (the build went stale ${rebuilds} time(s) mid-run from edits elsewhere: rebuilt, the sample retried).`
            : '.'),
        `The floor is \`node -e 0\`. A fresh temp DH_HOME; the environment stripped of DH_/TEMPORAL_/provider variables`,
        `and NODE_OPTIONS. ${rounds} rounds after one warm-up of each, the five interleaved (order rotated), medians and p90.`,
        '',
        '| command | median | p90 | × floor | tsx ÷ compiled |',
        '| --- | ---: | ---: | ---: | ---: |',
        row('`node -e 0` (floor)', 'floor', null),
        row('`dh --help`, compiled', 'helpCompiled', 'helpTsx'),
        row('`dh --help`, through tsx (before)', 'helpTsx', null),
        row('`dh steer` → Temporal connect, compiled', 'steerCompiled', 'steerTsx'),
        row('`dh steer` → Temporal connect, through tsx (before)', 'steerTsx', null),
        '',
        `Goal ≤ ${GOAL_MS} ms (compiled): \`--help\` ${verdict('helpCompiled')}, \`steer\` to its connect ${verdict('steerCompiled')}.`,
        `Above the floor: \`--help\` ${fmt(m('helpCompiled') - m('floor'))} ms compiled vs ${fmt(m('helpTsx') - m('floor'))} ms through tsx;`,
        `\`steer\` ${fmt(m('steerCompiled') - m('floor'))} ms vs ${fmt(m('steerTsx') - m('floor'))} ms.`,
      ].join('\n'),
    },
  ];
}
