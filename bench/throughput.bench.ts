// Throughput: model steps per second with 1, 10 and 100 concurrent sessions on one worker, against the
// bare Temporal workflow (two no-op activities per step) at the same concurrency on the same server.
import { fmt, median, type BenchSection } from './measure.js';
import { processCpuMs, startBare, startBenchServer, startSessionStack, turnReplies } from './harness.bench.js';

/** Ours against bare Temporal at the same concurrency. */
const GOAL = 0.8;

export async function throughputBench(
  levels = (process.env.DH_BENCH_THROUGHPUT_LEVELS ?? '1,10,100').split(',').map(Number),
  toolSteps = Number(process.env.DH_BENCH_THROUGHPUT_STEPS ?? 4),
  rounds = Number(process.env.DH_BENCH_THROUGHPUT_ROUNDS ?? 3),
): Promise<BenchSection[]> {
  const server = await startBenchServer();
  const tags: string[] = [];
  for (const c of levels)
    for (let r = 0; r < rounds; r++) for (let i = 0; i < c; i++) tags.push(`task c${c}r${r}s${i}:`);
  // Slots as the bare worker's SDK default (100 activities per worker), so neither side is capped lower.
  const stack = await startSessionStack(server, {
    script: { mode: 'match', cache: 'off', replies: tags.flatMap((tag) => turnReplies(tag, toolSteps)) },
    modelConcurrency: 100,
    toolConcurrency: 100,
  });
  const bare = await startBare(server);
  const steps = toolSteps + 1;
  const rows: string[] = [];
  const cpuRows: string[] = [];
  try {
    await bare.run(4, 2); // warm-up
    for (const c of levels) {
      const ours: number[] = [];
      const base: number[] = [];
      // CPU per step, split between the Temporal server and the bench process (workers, provider, clients).
      const cpu = {
        ours: { server: [] as number[], bench: [] as number[] },
        bare: { server: [] as number[], bench: [] as number[] },
      };
      const measureCpu = async (into: { server: number[]; bench: number[] }, work: () => Promise<void>) => {
        const server0 = processCpuMs(server.pid);
        const bench0 = process.cpuUsage();
        await work();
        const used = process.cpuUsage(bench0);
        into.server.push((processCpuMs(server.pid) - server0) / (c * steps));
        into.bench.push((used.user + used.system) / 1000 / (c * steps));
      };
      for (let r = 0; r < rounds; r++) {
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
      cpuRows.push(
        `| ${c} | ${fmt(median(cpu.ours.server))} ms | ${fmt(median(cpu.bare.server))} ms | ` +
          `${fmt(median(cpu.ours.bench))} ms | ${fmt(median(cpu.bare.bench))} ms |`,
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
        `${toolSteps} tool steps and an answer (${steps} steps) on the scripted provider (loopback, no delay, in the bench`,
        'process), from the first start to the last `turn/end`. Baseline: C bare workflows of the same steps (two no-op',
        `activities per step) on the same server, from start to the last result. Medians of ${rounds} rounds, interleaved.`,
        '',
        `| concurrent sessions | ours (steps/s) | bare (steps/s) | ours / bare | goal ≥ ${GOAL}× |`,
        '| ---: | ---: | ---: | ---: | --- |',
        ...rows,
        '',
        'CPU per step (median over the rounds; the Temporal server from /proc, the bench process — workers,',
        'scripted provider and clients — from process.cpuUsage):',
        '',
        '| concurrent sessions | server, ours | server, bare | bench process, ours | bench process, bare |',
        '| ---: | ---: | ---: | ---: | ---: |',
        ...cpuRows,
      ].join('\n'),
    },
  ];
}
