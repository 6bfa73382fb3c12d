// `dh eval`'s cost per evaluated step: a run over recorded steps (the eval workflow and its activity: the source
// read and re-derived, the eval log written, the gate, the call, the answer logged, the diff and the judge)
// against the same candidate bodies sent straight to the same provider, at the same concurrency, in the same run.
import { deriveSentRequest } from '../src/audit/derive-sent-requests.js';
import { candidateSentSeq } from '../src/eval/eval-log.js';
import { planEvalTargets } from '../src/eval/plan-eval.js';
import { evalWorkflowId, type EvalRunInput, type EvalRunResult } from '../src/shared/eval-contracts.js';
import { evalRun } from '../src/workflows/eval-workflow.js';
import { fmt, median, type BenchSection } from './measure.js';
import { startBenchServer, startSessionStack, turnReplies } from './harness.bench.js';

const SESSIONS = 20;
const TOOL_STEPS = 2;
const CONCURRENCY = 4;
const ROUNDS = 3;

export async function evalBench(): Promise<BenchSection[]> {
  const server = await startBenchServer();
  const tags = Array.from({ length: SESSIONS }, (_, i) => `<eval-bench-${i}>`);
  const stack = await startSessionStack(server, {
    script: {
      mode: 'match',
      replies: tags.flatMap((tag) => turnReplies(tag, TOOL_STEPS)),
      // Every candidate: the recorded replies are used up by the sessions themselves.
      default: { text: 'A candidate answer of about the same length as the recorded ones.' },
    },
  });
  try {
    const ids = tags.map((_, i) => `eval-bench-${i}`);
    await Promise.all(
      ids.map(async (id, i) => {
        await stack.start(id, `${tags[i] ?? ''} go`);
        await stack.turnEnd(id, 1, 120_000);
      }),
    );
    const evalMs: number[] = [];
    const historyBytes: number[] = [];
    let bodies: string[] = [];
    let steps = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const runId = `bench-${round}`;
      const { targets } = await planEvalTargets((id) => stack.read(id), ids, { runId, at: 'step' });
      steps = targets.length;
      const started = performance.now();
      const handle = await stack.client.workflow.start(evalRun, {
        taskQueue: stack.taskQueue,
        workflowId: evalWorkflowId(runId),
        args: [
          {
            runId,
            change: { temperature: 0.5 },
            targets,
            concurrency: CONCURRENCY,
            at: Date.now(),
          } satisfies EvalRunInput,
        ],
      });
      const result: EvalRunResult = await handle.result();
      evalMs.push(performance.now() - started);
      if (result.outcomes.some((o) => o.status !== 'answered'))
        throw new Error(`round ${round}: a step was not answered`);
      const history = await handle.fetchHistory();
      historyBytes.push(Buffer.byteLength(JSON.stringify(history)));
      if (round === 0) {
        // The candidates' wire bodies, as their eval logs derive them: the baseline sends exactly these.
        bodies = await Promise.all(
          result.outcomes.map(async ({ target }) => {
            const events = await stack.read(target.evalSessionId);
            const sent = events[candidateSentSeq(events) ?? -1];
            if (sent?.type !== 'request/sent') throw new Error('no candidate request');
            const derived = await deriveSentRequest(target.evalSessionId, events, sent, { profile: stack.profile });
            if (derived.wire === null) throw new Error(derived.error ?? 'underivable');
            return derived.wire.body;
          }),
        );
      }
    }
    const bareMs: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const started = performance.now();
      await sendAll(`${stack.profile.baseURL}/chat/completions`, bodies, CONCURRENCY);
      bareMs.push(performance.now() - started);
    }
    const evalStep = median(evalMs) / steps;
    const bareStep = median(bareMs) / steps;
    return [
      {
        title: 'dh eval per step',
        command: 'npm run bench -- --only eval',
        body: [
          `An eval run over ${steps} recorded steps (${SESSIONS} sessions of ${TOOL_STEPS + 1} steps, every step, change:`,
          `temperature), ${CONCURRENCY} in flight, against the same ${steps} candidate bodies POSTed straight to the same`,
          'scripted provider at the same concurrency (read to the end of the stream). Wall time of each, median of',
          `${ROUNDS} rounds, same run. An eval step reads and re-derives its source, writes its eval log, passes the gate,`,
          'calls the provider, logs the answer and diffs it; the eval workflow adds one activity per step to its history.',
          '',
          '| | per step | steps/s |',
          '| --- | ---: | ---: |',
          `| bare POST of the candidate body | ${fmt(bareStep)} ms | ${fmt(1000 / bareStep, 1)} |`,
          `| dh eval | ${fmt(evalStep)} ms (${fmt(evalStep / bareStep, 1)}×) | ${fmt(1000 / evalStep, 1)} |`,
          '',
          `The eval's own cost is ${fmt(evalStep - bareStep)} ms a step over the call; against a real model's seconds per`,
          `call it is small. The eval workflow's history: ${fmt(median(historyBytes) / steps / 1024)} KiB a step (JSON),`,
          'ids, digests and figures only; the answers are in the eval logs.',
        ].join('\n'),
      },
    ];
  } finally {
    await stack.stop();
    await server.stop();
  }
}

/** POSTs every body, `concurrency` at a time, reading each answer to its end. */
async function sendAll(url: string, bodies: readonly string[], concurrency: number): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < bodies.length) {
      const body = bodies[next++] ?? '';
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
        body,
      });
      if (!response.ok) throw new Error(`bare call: HTTP ${response.status}: ${(await response.text()).slice(0, 200)}`);
      await response.text();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
}
