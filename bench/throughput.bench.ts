// Throughput: model steps per second with 1, 10 and 100 concurrent sessions on one worker, against the
// bare Temporal workflow (two no-op activities per step) at the same concurrency on the same server.
import { fmt, median, type BenchSection } from './measure.js';
import { startBare, startBenchServer, startSessionStack, turnReplies } from './harness.bench.js';

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
  try {
    await bare.run(4, 2); // warm-up
    for (const c of levels) {
      const ours: number[] = [];
      const base: number[] = [];
      for (let r = 0; r < rounds; r++) {
        const wall = await bare.run(steps, c);
        base.push((c * steps) / (wall / 1000));
        const begin = performance.now();
        const ids = Array.from({ length: c }, (_, i) => `c${c}r${r}s${i}`);
        await Promise.all(ids.map((id) => stack.start(id, `task ${id}: go`)));
        const ends = await Promise.all(ids.map((id) => stack.turnEnd(id, 1)));
        ours.push((c * steps) / ((Math.max(...ends) - begin) / 1000));
      }
      const o = median(ours);
      const b = median(base);
      rows.push(`| ${c} | ${fmt(o, 1)} | ${fmt(b, 1)} | ${fmt(o / b)}× | ${o / b >= 0.5 ? 'met' : 'missed'} |`);
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
        '| concurrent sessions | ours (steps/s) | bare (steps/s) | ours / bare | goal ≥ 0.5× |',
        '| ---: | ---: | ---: | ---: | --- |',
        ...rows,
      ].join('\n'),
    },
  ];
}
