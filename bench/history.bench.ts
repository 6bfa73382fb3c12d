// History growth: Temporal history bytes per step of a session (ids, cursors and digests) against the
// bytes a transcript-passing design would put in history for the same session (the full message list in,
// the assistant message out, per step), from the same log.
import proto from '@temporalio/proto';
import { buildRequest } from '../src/core/index.js';
import { fmt, median, type BenchSection } from './measure.js';
import { startBenchServer } from './harness.bench.js';
import { runScriptedSession } from './cache.bench.js';

/** Temporal's default history size limit (`limit.historySize.error`): 50 MiB. */
const HISTORY_LIMIT = 50 * 1024 * 1024;
/** Temporal's default payload size limit (`limit.blobSize.error`): 2 MiB. */
const PAYLOAD_LIMIT = 2 * 1024 * 1024;

export async function historyBench(turns = Number(process.env.DH_BENCH_HISTORY_TURNS ?? 50)): Promise<BenchSection[]> {
  const server = await startBenchServer();
  let run;
  try {
    run = await runScriptedSession(server, turns);
  } finally {
    await server.stop();
  }
  const { events, history, sessionId } = run;
  // Ours: encoded size of each history event, cumulated at the start of each step (its modelStep scheduling).
  const HistoryEvent = proto.temporal.api.history.v1.HistoryEvent;
  const oursCumulative: number[] = [];
  let total = 0;
  for (const e of history.events ?? []) {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'modelStep' && total > 0)
      oursCumulative.push(total);
    total += HistoryEvent.encode(HistoryEvent.fromObject(e)).finish().length;
  }
  oursCumulative.push(total);
  // Transcript passing: per step, the request's messages JSON in and the assistant message JSON out.
  const transcript: number[] = [];
  const inBytes: number[] = [];
  for (const e of events) {
    if (e.type !== 'request/sent') continue;
    const request = buildRequest(sessionId, events.slice(0, e.seq));
    const answer = events.find((a) => a.type === 'assistant/message' && a.turn === e.turn && a.step === e.step);
    const messagesIn = Buffer.byteLength(JSON.stringify(request.messages));
    inBytes.push(messagesIn);
    transcript.push(messagesIn + Buffer.byteLength(JSON.stringify(answer ?? {})));
  }
  const steps = transcript.length;
  const transcriptCumulative = transcript.map(
    (
      (sum) => (v: number) =>
        (sum += v)
    )(0),
  );
  const oursPerStep = oursCumulative.map((v, i) => v - (oursCumulative[i - 1] ?? 0));
  // Extrapolation: the message list grows by a median `growth` bytes per step.
  const growth = median(inBytes.slice(1).map((v, i) => v - (inBytes[i] ?? 0)));
  const lastOut = (transcript[steps - 1] ?? 0) - (inBytes[steps - 1] ?? 0);
  let cumulative = transcriptCumulative[steps - 1] ?? 0;
  let step = steps;
  let nextIn = inBytes[steps - 1] ?? 0;
  while (cumulative < HISTORY_LIMIT) {
    step++;
    nextIn += growth;
    cumulative += nextIn + lastOut;
  }
  const payloadStep = steps + Math.ceil((PAYLOAD_LIMIT - (inBytes[steps - 1] ?? 0)) / growth);
  const oursMedian = median(oursPerStep.slice(1));
  const oursSteps = Math.floor(HISTORY_LIMIT / oursMedian);
  const marks = [1, 2, 5, 10, 20, 50, 100].filter((s) => s <= steps);
  if (!marks.includes(steps)) marks.push(steps);
  const kb = (b: number) => `${fmt(b / 1024, 1)} KiB`;
  return [
    {
      title: 'History bytes per step',
      command: 'npm run bench -- --only history',
      body: [
        `A ${turns}-turn session (${steps} steps: per turn one \`echo\` call with ~400-character arguments, then an answer) on`,
        'one dev server. Ours: the encoded size of the workflow history (protobuf, what Temporal limits), cumulated',
        'up to the start of each step. Baseline, from the same log: what a transcript-passing design would record',
        "per step — the step's full message list (the request's `messages` JSON) into the model activity and the",
        'assistant message out. Ours counts the whole history (workflow tasks, signals, turn ends included); the',
        "transcript column counts only those two payloads per step, so it is that design's lower bound.",
        '',
        '| after step | ours (cumulative) | transcript passing (cumulative) | ratio |',
        '| ---: | ---: | ---: | ---: |',
        ...marks.map((s) => {
          const o = oursCumulative[s - 1] ?? total;
          const t = transcriptCumulative[s - 1] ?? 0;
          return `| ${s} | ${kb(o)} | ${kb(t)} | ${fmt(t / o)}× |`;
        }),
        '',
        '| figure | ours | transcript passing |',
        '| --- | ---: | ---: |',
        `| bytes per step (median) | ${kb(oursMedian)}, constant | ${kb(median(transcript))}, growing ${fmt(growth, 0)} B per step |`,
        `| last step | ${kb(oursPerStep[oursPerStep.length - 1] ?? 0)} | ${kb(transcript[steps - 1] ?? 0)} |`,
        `| step at which the history passes 50 MiB (extrapolated) | ~${oursSteps.toLocaleString('en')} (continue-as-new resets it long before) | ~${step.toLocaleString('en')} |`,
        `| step at which one payload passes Temporal's 2 MiB limit | never (constant) | ~${payloadStep.toLocaleString('en')} |`,
        '',
        `Per-step growth is the size of one step's additions to the conversation (here ~${fmt(growth, 0)} B); with real tool`,
        'outputs of several KiB the transcript design reaches the limits proportionally sooner.',
      ].join('\n'),
    },
  ];
}
