// Profiling aid for the step path: C sessions × one turn of tool steps on one worker, the measured window's
// bounds printed as hrtime microseconds so a `--cpu-prof` profile can be cut to it (scripts/profile-summary.mjs).
// Run: node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx scripts/profile-steps.ts [sessions] [rounds] [--bare]
// (`--bare`: the bare Temporal workflow of bench/bare instead, two no-op activities per step; `--timeline`: the
// last session's history event by event, with the server's timestamps.)
import proto from '@temporalio/proto';
import { sessionWorkflowId } from '../src/shared/session-messages.js';
import { startBare, startBenchServer, startSessionStack, turnReplies } from '../bench/harness.bench.js';

const { EventType } = proto.temporal.api.enums.v1;
const bareOnly = process.argv.includes('--bare');
const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const sessions = Number(positional[0] ?? 100);
const rounds = Number(positional[1] ?? 3);
const toolSteps = 4;
const tags: string[] = [];
for (let r = -1; r < rounds; r++) for (let i = 0; i < sessions; i++) tags.push(`task r${r}s${i}:`);
const server = await startBenchServer();
// Only the side being profiled runs: an idle session worker's polling would count against bare.
const bare = bareOnly ? await startBare(server) : undefined;
const stack = bareOnly
  ? undefined
  : await startSessionStack(server, {
      script: { mode: 'match', cache: 'off', replies: tags.flatMap((tag) => turnReplies(tag, toolSteps)) },
      modelConcurrency: 100,
      toolConcurrency: 100,
      // A process of its own, as a real provider is: the profiles show the worker alone.
      providerProcess: true,
    });
const runRound = async (r: number): Promise<number> => {
  if (!stack) return bare?.run(toolSteps + 1, sessions) ?? 0;
  const begin = performance.now();
  const ids = Array.from({ length: sessions }, (_, i) => `r${r}s${i}`);
  await Promise.all(ids.map((id) => stack.start(id, `task ${id}: go`)));
  const ends = await Promise.all(ids.map((id) => stack.turnEnd(id, 1)));
  return Math.max(...ends) - begin;
};
try {
  await runRound(-1); // warm-up: caches, JIT, the bundle's first load
  const us = () => Number(process.hrtime.bigint() / 1000n);
  const from = us();
  const cpu0 = process.cpuUsage();
  const walls: number[] = [];
  for (let r = 0; r < rounds; r++) walls.push(await runRound(r));
  const cpu = process.cpuUsage(cpu0);
  const steps = sessions * rounds * (toolSteps + 1);
  console.log(`WINDOW ${from} ${us()}`);
  console.log(
    `steps ${steps}; steps/s per round ${walls.map((w) => ((sessions * (toolSteps + 1)) / (w / 1000)).toFixed(1)).join(' ')}; ` +
      `process CPU per step ${((cpu.user + cpu.system) / 1000 / steps).toFixed(2)} ms`,
  );
  // What the server stored for one of them: its history's events by type.
  const workflowId = stack ? sessionWorkflowId(`r${rounds - 1}s0`) : bare?.lastIds[0];
  const client = stack?.client ?? bare?.client;
  const history = await client?.workflow.getHandle(workflowId ?? '').fetchHistory();
  const types = new Map<string, number>();
  for (const e of history?.events ?? []) {
    const name = (EventType[e.eventType ?? 0] ?? '?').replace(/^EVENT_TYPE_/, '');
    types.set(name, (types.get(name) ?? 0) + 1);
  }
  console.log(`history of ${workflowId}: ${history?.events?.length} events`, JSON.stringify(Object.fromEntries(types)));
  if (process.argv.includes('--timeline')) printTimeline(history?.events ?? []);
} finally {
  await bare?.stop();
  await stack?.stop();
  await server.stop();
}

/** One line per history event: ms since the previous one and since the start, its type, the activity or marker. */
function printTimeline(events: readonly proto.temporal.api.history.v1.IHistoryEvent[]): void {
  const ms = (e: proto.temporal.api.history.v1.IHistoryEvent) =>
    Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;
  const start = events[0] ? ms(events[0]) : 0;
  let previous = start;
  for (const e of events) {
    const at = ms(e);
    const what =
      e.activityTaskScheduledEventAttributes?.activityType?.name ?? e.markerRecordedEventAttributes?.markerName ?? '';
    const type = (EventType[e.eventType ?? 0] ?? '?').replace(/^EVENT_TYPE_/, '');
    console.log(
      `${String(e.eventId).padStart(4)} +${(at - previous).toFixed(1).padStart(6)} ms ${(at - start).toFixed(1).padStart(7)} ms  ${type} ${what}`,
    );
    previous = at;
  }
}
