// Idle sessions: 1,000 sessions held by one worker (each started, one turn, then idle) — the worker's
// and the dev server's resident memory, and the time to wake one with a steer, against the same wake
// when only one session exists.
import { getHeapStatistics } from 'node:v8';
import { fmt, median, type BenchSection } from './measure.js';
import { percentile, startBenchServer, startSessionStack, vmRssBytes } from './harness.bench.js';

const MiB = 1024 * 1024;

export async function idleBench(
  sessions = Number(process.env.DH_BENCH_IDLE_SESSIONS ?? 1000),
  wakes = Number(process.env.DH_BENCH_IDLE_WAKES ?? 50),
  // DH_BENCH_IDLE_WORKFLOW_CACHE=N caps the worker's sticky cache (DH_WORKFLOW_CACHE_MAX): its own section.
  workflowCache = process.env.DH_BENCH_IDLE_WORKFLOW_CACHE
    ? Number(process.env.DH_BENCH_IDLE_WORKFLOW_CACHE)
    : undefined,
  // DH_BENCH_IDLE_TRACING=1 bundles the OpenTelemetry workflow interceptors (as a worker with telemetry on).
  tracing = process.env.DH_BENCH_IDLE_TRACING === '1',
): Promise<BenchSection[]> {
  const server = await startBenchServer({ tracing });
  const ids = Array.from({ length: sessions }, (_, i) => `idle${i}`);
  const wakeTags = Array.from({ length: 2 * wakes + 1 }, (_, k) => `wake #${k}:`);
  const stack = await startSessionStack(server, {
    script: {
      mode: 'match',
      cache: 'off',
      replies: [
        ...ids.map((id) => ({ match: { lastUserContains: `task ${id}:` }, text: `Done with ${id}.` })),
        ...wakeTags.map((tag) => ({ match: { lastUserContains: tag }, text: `Woke for ${tag}` })),
      ],
    },
    ...(workflowCache !== undefined ? { maxCachedWorkflows: workflowCache } : {}),
  });
  const turns = new Map<string, number>();
  let wakeNo = 0;
  const wake = async (id: string): Promise<number> => {
    const turn = (turns.get(id) ?? 1) + 1;
    turns.set(id, turn);
    const begin = performance.now();
    await stack.steer(id, `wake #${wakeNo++}: carry on`);
    return (await stack.turnEnd(id, turn)) - begin;
  };
  try {
    // Baseline: one session, woken `wakes` times (after one untimed wake).
    await stack.start(ids[0] ?? 'idle0', `task ${ids[0]}: go`);
    await stack.turnEnd(ids[0] ?? 'idle0', 1);
    await wake(ids[0] ?? 'idle0');
    const oneWakes: number[] = [];
    for (let k = 0; k < wakes; k++) oneWakes.push(await wake(ids[0] ?? 'idle0'));
    const workerOne = process.memoryUsage().rss;
    const serverOne = vmRssBytes(server.pid);

    // The rest, 50 at a time (start, one turn), then idle.
    const begin = performance.now();
    let next = 1;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next < ids.length) {
          const id = ids[next++] ?? '';
          await stack.start(id, `task ${id}: go`);
          await stack.turnEnd(id, 1);
        }
      }),
    );
    const fillSeconds = (performance.now() - begin) / 1000;
    await new Promise((r) => setTimeout(r, 2_000)); // let the worker settle
    const workerAll = process.memoryUsage().rss;
    const serverAll = vmRssBytes(server.pid);
    const manyWakes: number[] = [];
    for (let k = 0; k < wakes; k++) {
      const id = ids[1 + ((k * 7919) % (ids.length - 1))] ?? 'idle1';
      manyWakes.push(await wake(id));
    }
    const heapMiB = getHeapStatistics().heap_size_limit / MiB;
    const sdkDefault = Math.max(Math.floor((Math.max(heapMiB - 200, 0) * 600) / 1024), 10);
    const cacheLine =
      workflowCache === undefined
        ? [
            `same figures with one session. The SDK's sticky workflow cache holds up to ${sdkDefault.toLocaleString('en')} workflows here`,
            '(its default for this heap), so the idle sessions stay cached.',
          ]
        : [
            `same figures with one session. The sticky workflow cache is capped at ${workflowCache.toLocaleString('en')} workflows`,
            '(`DH_WORKFLOW_CACHE_MAX`), so most idle sessions are evicted and a woken one is replayed from its history first.',
          ];
    const perSession = (a: number, b: number) => `${fmt((b - a) / (sessions - 1) / 1024, 1)} KiB`;
    return [
      {
        title:
          'Idle sessions' +
          (workflowCache !== undefined ? `, workflow cache capped at ${workflowCache}` : '') +
          (tracing ? ', workflow tracing interceptors bundled' : ''),
        command:
          (workflowCache !== undefined ? `DH_BENCH_IDLE_WORKFLOW_CACHE=${workflowCache} ` : '') +
          (tracing ? 'DH_BENCH_IDLE_TRACING=1 ' : '') +
          'npm run bench -- --only idle',
        body: [
          `${sessions.toLocaleString('en')} sessions on one worker, each started with a followup and one turn (a single`,
          `answer step), then idle (started ${fmt((sessions - 1) / fillSeconds, 1)} sessions/s, 50 at a time). The worker runs`,
          'in the bench process, so its RSS (`process.memoryUsage().rss`) also holds the scripted provider, the client',
          'and the SQLite store; the dev server is its own process (`VmRSS` from `/proc/<pid>/status`). Baseline: the',
          ...cacheLine,
          ...(tracing
            ? [
                "The bundle carries Temporal's OpenTelemetry workflow interceptors, as a worker with telemetry on runs",
                'it (telemetry itself is off here: their spans go to a sink that drops them).',
              ]
            : []),
          '',
          '| memory | 1 session | all sessions | per extra session |',
          '| --- | ---: | ---: | ---: |',
          `| worker process RSS | ${fmt(workerOne / MiB, 0)} MiB | ${fmt(workerAll / MiB, 0)} MiB | ${perSession(workerOne, workerAll)} |`,
          `| dev server VmRSS | ${fmt(serverOne / MiB, 0)} MiB | ${fmt(serverAll / MiB, 0)} MiB | ${perSession(serverOne, serverAll)} |`,
          '',
          `Wake latency: a \`steer\` signal sent to an idle session until its \`turn/end\` is appended to the log (one model`,
          `step on the scripted provider, then closeTurn), ${wakes} wakes each, sequential; with all sessions the woken`,
          'session varies. p99 of 50 samples is the largest but one.',
          '',
          '| wake | p50 | p99 | p50 vs 1 session |',
          '| --- | ---: | ---: | ---: |',
          `| 1 session exists (baseline) | ${fmt(median(oneWakes))} ms | ${fmt(percentile(oneWakes, 99))} ms | 1.00× |`,
          `| ${sessions.toLocaleString('en')} idle sessions | ${fmt(median(manyWakes))} ms | ${fmt(percentile(manyWakes, 99))} ms | ${fmt(median(manyWakes) / median(oneWakes))}× |`,
        ].join('\n'),
      },
    ];
  } finally {
    await stack.stop();
    await server.stop();
  }
}
