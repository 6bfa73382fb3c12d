// Throughput: model steps per second with 1, 10 and 100 concurrent sessions on one worker, against the
// bare Temporal workflow (two no-op activities per step) at the same concurrency on the same server.
import { fmt, median, type BenchSection } from './measure.js';
import { processCpuMs, startBare, startBenchServer, startSessionStack, turnReplies } from './harness.bench.js';

/** Ours against bare Temporal at the same concurrency. */
const GOAL = 0.8;
/** The worker process's CPU per step against bare's worker. */
const WORKER_CPU_GOAL = 2;
/** Sessions (and bare workflows) run once before anything is measured. */
const WARM_UP_SESSIONS = 10;
/**
 * Steps measured at each level at least: at 1 session a round is a single 5-step turn (~0.15 s), whose wall
 * time a neighbour's burst on a shared machine moves by a third, so low levels run more rounds.
 */
const MIN_MEASURED_STEPS = 100;

export async function throughputBench(
  levels = (process.env.DH_BENCH_THROUGHPUT_LEVELS ?? '1,10,100').split(',').map(Number),
  toolSteps = Number(process.env.DH_BENCH_THROUGHPUT_STEPS ?? 4),
  rounds = Number(process.env.DH_BENCH_THROUGHPUT_ROUNDS ?? 3),
): Promise<BenchSection[]> {
  const steps = toolSteps + 1;
  const roundsAt = (c: number) => Math.max(rounds, Math.ceil(MIN_MEASURED_STEPS / (c * steps)));
  const server = await startBenchServer();
  // Warm-up sessions first (caches, JIT, the bundle's first load), as bare gets its warm-up run.
  const tags: string[] = Array.from({ length: WARM_UP_SESSIONS }, (_, i) => `task warm${i}:`);
  for (const c of levels)
    for (let r = 0; r < roundsAt(c); r++) for (let i = 0; i < c; i++) tags.push(`task c${c}r${r}s${i}:`);
  // Slots as the bare worker's SDK default (100 activities per worker), so neither side is capped lower.
  const stack = await startSessionStack(server, {
    script: { mode: 'match', cache: 'off', replies: tags.flatMap((tag) => turnReplies(tag, toolSteps)) },
    modelConcurrency: 100,
    toolConcurrency: 100,
    providerProcess: true,
  });
  const providerPid = stack.providerPid ?? -1;
  const bare = await startBare(server);
  const rows: string[] = [];
  const cpuRows: string[] = [];
  try {
    // Warm-up of both sides, unmeasured.
    await bare.run(steps, WARM_UP_SESSIONS);
    const warm = Array.from({ length: WARM_UP_SESSIONS }, (_, i) => `warm${i}`);
    await Promise.all(warm.map((id) => stack.start(id, `task ${id}: go`)));
    await Promise.all(warm.map((id) => stack.turnEnd(id, 1)));
    for (const c of levels) {
      const ours: number[] = [];
      const base: number[] = [];
      // CPU per step: the Temporal server, the bench process (the worker and the clients), the provider.
      const cpu = {
        ours: { server: [] as number[], bench: [] as number[], provider: [] as number[] },
        bare: { server: [] as number[], bench: [] as number[], provider: [] as number[] },
      };
      const measureCpu = async (into: (typeof cpu)['ours'], work: () => Promise<void>) => {
        const server0 = processCpuMs(server.pid);
        const provider0 = processCpuMs(providerPid);
        const bench0 = process.cpuUsage();
        await work();
        const used = process.cpuUsage(bench0);
        into.server.push((processCpuMs(server.pid) - server0) / (c * steps));
        into.provider.push((processCpuMs(providerPid) - provider0) / (c * steps));
        into.bench.push((used.user + used.system) / 1000 / (c * steps));
      };
      for (let r = 0; r < roundsAt(c); r++) {
        await measureCpu(cpu.bare, async () => {
          const wall = await bare.run(steps, c);
          base.push((c * steps) / (wall / 1000));
        });
        await measureCpu(cpu.ours, async () => {
          const begin = performance.now();
          const ids = Array.from({ length: c }, (_, i) => `c${c}r${r}s${i}`);
          await Promise.all(ids.map((id) => stack.start(id, `task ${id}: go`)));
          const ends = await Promise.all(ids.map((id) => stack.turnEnd(id, 1)));
          ours.push((c * steps) / ((Math.max(...ends) - begin) / 1000));
        });
      }
      const o = median(ours);
      const b = median(base);
      rows.push(`| ${c} | ${fmt(o, 1)} | ${fmt(b, 1)} | ${fmt(o / b)}× | ${o / b >= GOAL ? 'met' : 'missed'} |`);
      const workerRatio = median(cpu.ours.bench) / median(cpu.bare.bench);
      cpuRows.push(
        `| ${c} | ${fmt(median(cpu.ours.server))} ms | ${fmt(median(cpu.bare.server))} ms | ` +
          `${fmt(median(cpu.ours.bench))} ms | ${fmt(median(cpu.bare.bench))} ms | ${fmt(workerRatio)}× | ` +
          `${workerRatio <= WORKER_CPU_GOAL ? 'met' : 'missed'} | ${fmt(median(cpu.ours.provider))} ms |`,
      );
    }
  } finally {
    await bare.stop();
    await stack.stop();
    await server.stop();
  }
  return [
    {
      title: 'Throughput',
      command: 'npm run bench -- --only throughput',
      body: [
        `Model steps per second with C sessions running at once on one worker process (session, model and tool`,
        `queues; 100 model and 100 tool activity slots, like the bare worker's SDK default), each session one turn of`,
        `${toolSteps} tool steps and an answer (${steps} steps) on the scripted provider (loopback, no delay, a process of`,
        'its own, as a real provider is remote), from the first start to the last `turn/end`. The `echo` tool is quick, so',
        'each tool step\'s call runs in its model step\'s activity (docs/plugins.md, "Where tools run"). Baseline: C bare',
        'workflows of the same steps (two no-op activities per step) on the same server, from start to the last result.',
        `Medians of ${levels.map((c) => `${roundsAt(c)} rounds at ${c}`).join(', ')} (at least ${MIN_MEASURED_STEPS} steps per level),`,
        `interleaved, after ${WARM_UP_SESSIONS} unmeasured sessions (and bare workflows) of each.`,
        '',
        `| concurrent sessions | ours (steps/s) | bare (steps/s) | ours / bare | goal ≥ ${GOAL}× |`,
        '| ---: | ---: | ---: | ---: | --- |',
        ...rows,
        '',
        'CPU per step (median over the rounds; the Temporal server and the provider from /proc, the worker process —',
        'the bench process: its workers and clients — from process.cpuUsage). Bare makes no model call, so it has no',
        "provider; ours pays the provider call's client side (the `openai` package, HTTP, the stream) in the worker:",
        '',
        `| concurrent sessions | server, ours | server, bare | worker, ours | worker, bare | worker ours / bare | goal ≤ ${WORKER_CPU_GOAL}× | provider, ours |`,
        '| ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |',
        ...cpuRows,
      ].join('\n'),
    },
  ];
}
