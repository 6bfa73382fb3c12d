// Resumable live streams: how fast a consumer that reconnects with a stream position gets its first frame
// (SessionFollower `{ from }`, and the console's SSE endpoint with `Last-Event-ID` over HTTP) against a fresh
// consumer at the log head, mid-answer; and how many delta rows a step writes and how many compaction leaves.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { startConsoleServer, type ConsoleServer } from '../src/console/console-server.js';
import type { SessionEvent } from '../src/core/index.js';
import { followupSignal, sessionWorkflowId } from '../src/shared/session-messages.js';
import type { Script } from '../src/scripted-provider/script.js';
import { PUBLISH_INTERVAL_MS, type LiveDelta } from '../src/streaming/delta-channel.js';
import { liveDeltaPathFor, SqliteDeltaChannel } from '../src/streaming/sqlite-delta-channel.js';
import { SessionFollower, type StreamFrame } from '../src/streaming/session-follower.js';
import { formatPosition, type StreamPosition } from '../src/streaming/stream-position.js';
import { lateLiveStream } from '../test/helpers/late-live-stream.js';
import { startScenarioRuntime, type ScenarioRuntime } from '../test/helpers/scenario-runtime.js';
import { echoTool } from '../test/helpers/test-tools.js';
import { echoCall, startBenchServer } from './harness.bench.js';
import { fmt, median, type BenchSection } from './measure.js';

/** Rounds of the reconnect measurement (one streamed answer each), after one warm-up round. */
const ROUNDS = Number(process.env.DH_BENCH_STREAM_ROUNDS ?? 10);
/** The long answer: 300 chunks of 8 characters, 10 ms apart (~3 s). */
const LONG_CHUNK = 8;
const LONG_CHUNKS = 300;
const LONG_DELAY_MS = 10;
/** Text frames the first consumer reads before it drops, and how long it stays away. */
const SEEN_FRAMES = 10;
const AWAY_MS = 100;

/** The rows turns: tool steps streaming text then an echo call, then an answer; the next turn has 2 steps. */
const ROW_SESSIONS = 3;
const TURN1_TOOL_STEPS = 3;
const STEP_TEXT_CHARS = 400;
const ROW_CHUNK = 4;
const ROW_DELAY_MS = 5;
const TOOL_ARG_CHARS = 120;

const LONG_TAG = '<stream-bench-long>';
const rowsTag = (i: number, turn: number) => `<stream-bench-rows-${i}-turn-${turn}>`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const words = (chars: number) => 'streamed words '.repeat(Math.ceil(chars / 15)).slice(0, chars);

/** Waits for the `turn/end` of `turn` in the session's log. */
async function turnEnd(runtime: ScenarioRuntime, sessionId: string, turn: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let from = 0;
  while (Date.now() < deadline) {
    const events: SessionEvent[] = await runtime.store.read(sessionId, from).catch(() => []);
    if (events.some((e) => e.type === 'turn/end' && e.turn === turn)) return;
    from = events.at(-1) !== undefined ? (events.at(-1)?.seq ?? from) + 1 : from;
    await sleep(20);
  }
  throw new Error(`${sessionId}: turn ${turn} did not end within ${timeoutMs} ms`);
}

let messageCounter = 0;
async function say(runtime: ScenarioRuntime, sessionId: string, content: string): Promise<void> {
  await runtime.client.workflow
    .getHandle(sessionWorkflowId(sessionId))
    .signal(followupSignal, { content, messageId: `stream-bench-${++messageCounter}` });
}

/** Polls a follower until it returns frames; ms from `started` to them. */
async function firstFrames(follower: SessionFollower, started: number): Promise<{ ms: number; frames: StreamFrame[] }> {
  for (;;) {
    const frames = await follower.poll();
    if (frames.length > 0) return { ms: performance.now() - started, frames };
    await follower.wait(1_000);
  }
}

/** Opens the console's live stream with `Last-Event-ID: lastEventId`; ms to its first message with an id. */
async function firstSseFrame(
  ui: ConsoleServer,
  sessionId: string,
  lastEventId: string,
): Promise<{ ms: number; id: string }> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 10_000);
  const started = performance.now();
  try {
    const response = await fetch(new URL(`/api/sessions/${encodeURIComponent(sessionId)}/live`, ui.url), {
      headers: { 'last-event-id': lastEventId },
      signal: abort.signal,
    });
    if (!response.ok || response.body === null) throw new Error(`live stream: HTTP ${response.status}`);
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error('live stream ended before a frame');
      buffer += decoder.decode(chunk.value as Uint8Array, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const id = /^id: ?(.*)$/m.exec(buffer.slice(0, end))?.[1];
        buffer = buffer.slice(end + 2);
        if (id !== undefined) return { ms: performance.now() - started, id };
      }
    }
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

interface ReconnectSamples {
  followerResume: number[];
  followerFresh: number[];
  sseResume: number[];
  sseFresh: number[];
  /** Rows the resumed consumer had missed when it came back (rows after its position). */
  missedRows: number[];
}

async function reconnectRounds(
  runtime: ScenarioRuntime,
  reader: SqliteDeltaChannel,
  ui: ConsoleServer,
): Promise<ReconnectSamples> {
  const sessionId = 'stream-bench-long';
  await runtime.start(sessionId);
  const samples: ReconnectSamples = {
    followerResume: [],
    followerFresh: [],
    sseResume: [],
    sseFresh: [],
    missedRows: [],
  };
  for (let round = 0; round <= ROUNDS; round++) {
    const turn = round + 1;
    const headBefore = await runtime.store.head(sessionId).catch(() => 0);
    await say(runtime, sessionId, `${LONG_TAG} answer at length (${turn})`);
    // The first consumer follows the turn until it has seen some of the answer, then drops.
    const first = new SessionFollower(runtime.store, reader, sessionId, { fromSeq: headBefore });
    let position: StreamPosition | null = null;
    let seen = 0;
    while (seen < SEEN_FRAMES) {
      for (const frame of await first.poll()) {
        if (frame.type === 'answer') throw new Error('the answer was logged before the consumer dropped');
        if (frame.type === 'text' && frame.turn === turn) seen++;
        position = frame.position;
      }
      await first.wait(1_000);
    }
    if (position === null) throw new Error('no position');
    const dropped = position;
    await sleep(AWAY_MS);
    const measures: (() => Promise<void>)[] = [
      async () => {
        const { ms, frames } = await firstFrames(
          new SessionFollower(runtime.store, reader, sessionId, { from: dropped }),
          performance.now(),
        );
        const [frame] = frames;
        if (frame?.type !== 'text' || frame.position.delta <= dropped.delta) {
          throw new Error(`resumed follower: unexpected first frame ${JSON.stringify(frame)}`);
        }
        if (round > 0) samples.followerResume.push(ms);
      },
      async () => {
        const head = await runtime.store.head(sessionId);
        const { ms, frames } = await firstFrames(
          new SessionFollower(runtime.store, reader, sessionId, { from: { seq: head, delta: 0 } }),
          performance.now(),
        );
        if (frames[0]?.type !== 'text') throw new Error(`fresh follower: first frame ${frames[0]?.type}`);
        if (round > 0) samples.followerFresh.push(ms);
      },
      async () => {
        const { ms, id } = await firstSseFrame(ui, sessionId, formatPosition(dropped));
        if (Number(id.split(':')[1]) <= dropped.delta) throw new Error(`resumed SSE: first frame ${id}`);
        if (round > 0) samples.sseResume.push(ms);
      },
      async () => {
        const head = await runtime.store.head(sessionId);
        const { ms } = await firstSseFrame(ui, sessionId, formatPosition({ seq: head, delta: 0 }));
        if (round > 0) samples.sseFresh.push(ms);
      },
    ];
    const missed = (await reader.read(sessionId, dropped.delta)).length;
    // The order rotated each round, so the machine's noise (and the growing row count) hits all four alike.
    for (let k = 0; k < measures.length; k++) await measures[(round + k) % measures.length]?.();
    const stillStreaming = !(await runtime.store.read(sessionId, headBefore)).some(
      (e) => e.type === 'assistant/message' && e.turn === turn,
    );
    if (!stillStreaming) throw new Error(`round ${round}: the answer was logged before the measurements ended`);
    if (round > 0) samples.missedRows.push(missed);
    await turnEnd(runtime, sessionId, turn);
  }
  return samples;
}

interface StepRows {
  readonly step: string;
  readonly text: number;
  readonly toolCall: number;
  readonly usage: number;
  readonly other: number;
}

interface RowsRound {
  /** Turn 1's steps, in order: rows written per kind. */
  readonly steps: StepRows[];
  readonly afterTurn1: number;
  readonly afterTurn1Steps: string[];
  readonly afterTurn2: number;
  readonly afterTurn2Steps: string[];
  readonly turn1RowsAfterTurn2: number;
}

/** Every row the session's live stream writes, read as it is written (before compaction deletes it). */
function collectRows(reader: SqliteDeltaChannel, sessionId: string): { stop(): Promise<Map<number, LiveDelta>> } {
  const rows = new Map<number, LiveDelta>();
  let open = true;
  let cursor = 0;
  const loop = (async () => {
    while (open) {
      for (const row of await reader.read(sessionId, cursor)) {
        rows.set(row.id, row);
        cursor = row.id;
      }
      await reader.wait(sessionId, 50);
    }
    for (const row of await reader.read(sessionId, cursor)) rows.set(row.id, row);
  })();
  return {
    stop: async () => {
      open = false;
      await loop;
      return rows;
    },
  };
}

/** The row count once the worker's publish buffer has been written (it flushes within PUBLISH_INTERVAL_MS). */
async function settledRows(reader: SqliteDeltaChannel, sessionId: string): Promise<LiveDelta[]> {
  await sleep(PUBLISH_INTERVAL_MS * 6);
  return reader.read(sessionId, 0);
}

const stepsOf = (rows: readonly LiveDelta[]) => [...new Set(rows.map((r) => `${r.turn}.${r.step}`))];

async function rowsRound(runtime: ScenarioRuntime, reader: SqliteDeltaChannel, i: number): Promise<RowsRound> {
  const sessionId = `stream-bench-rows-${i}`;
  await runtime.start(sessionId);
  const collector = collectRows(reader, sessionId);
  await say(runtime, sessionId, `${rowsTag(i, 1)} several steps`);
  await turnEnd(runtime, sessionId, 1);
  const afterTurn1 = await settledRows(reader, sessionId);
  await say(runtime, sessionId, `${rowsTag(i, 2)} two steps`);
  await turnEnd(runtime, sessionId, 2);
  const afterTurn2 = await settledRows(reader, sessionId);
  const written = [...(await collector.stop()).values()].filter((r) => r.turn === 1);
  const steps = [...new Set(written.map((r) => r.step))].sort((a, b) => a - b);
  if ((await reader.count(sessionId)) !== afterTurn2.length) throw new Error('count and read disagree');
  return {
    steps: steps.map((step) => {
      const of = written.filter((r) => r.step === step);
      const kind = (k: string) => of.filter((r) => r.kind === k).length;
      return {
        step: `1.${step}`,
        text: kind('text'),
        toolCall: kind('tool-call'),
        usage: kind('usage'),
        other: of.length - kind('text') - kind('tool-call') - kind('usage'),
      };
    }),
    afterTurn1: afterTurn1.length,
    afterTurn1Steps: stepsOf(afterTurn1),
    afterTurn2: afterTurn2.length,
    afterTurn2Steps: stepsOf(afterTurn2),
    turn1RowsAfterTurn2: afterTurn2.filter((r) => r.turn === 1).length,
  };
}

function rowsReplies(i: number, turn: number, toolSteps: number) {
  const text = words(STEP_TEXT_CHARS);
  const shape = { text, chunkSize: ROW_CHUNK, chunkDelayMs: ROW_DELAY_MS };
  return [
    ...(toolSteps > 0
      ? [
          {
            match: { lastUserContains: rowsTag(i, turn) },
            ...shape,
            toolCalls: [echoCall('call-1', TOOL_ARG_CHARS)],
            repeat: toolSteps,
          },
        ]
      : []),
    { match: { lastUserContains: rowsTag(i, turn) }, ...shape },
  ];
}

export async function streamBench(): Promise<BenchSection[]> {
  const server = await startBenchServer();
  const live = lateLiveStream();
  const longText = words(LONG_CHUNK * LONG_CHUNKS);
  const script: Script = {
    mode: 'match',
    cache: 'off',
    replies: [
      {
        match: { lastUserContains: LONG_TAG },
        text: longText,
        chunkSize: LONG_CHUNK,
        chunkDelayMs: LONG_DELAY_MS,
        repeat: ROUNDS + 1,
      },
      ...Array.from({ length: ROW_SESSIONS }, (_, i) => [
        ...rowsReplies(i, 1, TURN1_TOOL_STEPS),
        ...rowsReplies(i, 2, 1),
      ]).flat(),
    ],
  };
  const runtime = await startScenarioRuntime({
    address: server.address,
    namespace: server.namespace,
    workflowBundlePath: server.sessionBundlePath,
    script,
    tools: [echoTool],
    plugins: [live.plugin],
  });
  // The worker publishes through its own connection to the delta file; consumers read it through theirs,
  // as the console and `dh attach` do from their processes.
  live.bind(runtime.storePath);
  const livePath = liveDeltaPathFor(runtime.storePath);
  mkdirSync(dirname(livePath), { recursive: true });
  const reader = SqliteDeltaChannel.open(livePath);
  const consoleChannel = SqliteDeltaChannel.open(livePath);
  const ui = await startConsoleServer({
    store: runtime.store,
    channel: consoleChannel,
    sessions: null,
    uiDir: '/nonexistent-console-ui',
    host: '127.0.0.1',
    port: 0,
  });
  let reconnect: ReconnectSamples;
  const rows: RowsRound[] = [];
  try {
    reconnect = await reconnectRounds(runtime, reader, ui);
    for (let i = 0; i < ROW_SESSIONS; i++) rows.push(await rowsRound(runtime, reader, i));
  } finally {
    await ui.close();
    await consoleChannel.close();
    await reader.close();
    await live.close();
    await runtime.stop();
    await server.stop();
  }

  const m = (values: readonly number[]) => median(values);
  const ratio = (a: readonly number[], b: readonly number[]) => `${fmt(m(a) / m(b))}×`;
  const stepCount = rows[0]?.steps.length ?? 0;
  const perStep = (k: number, f: (s: StepRows) => number) =>
    m(rows.map((r) => (r.steps[k] ? f(r.steps[k]) : Number.NaN)));
  const total = (s: StepRows) => s.text + s.toolCall + s.usage + s.other;
  const textChunks = Math.ceil(STEP_TEXT_CHARS / ROW_CHUNK);
  const argChunks = Math.ceil(echoCall('call-1', TOOL_ARG_CHARS).arguments.length / ROW_CHUNK);
  const stepRows = Array.from({ length: stepCount }, (_, k) => {
    const tool = k < TURN1_TOOL_STEPS;
    const chunks = textChunks + (tool ? 1 + argChunks : 0);
    const text = perStep(k, (s) => s.text);
    return (
      `| ${rows[0]?.steps[k]?.step ?? ''} ${tool ? '(text + echo call)' : '(answer)'} | ${textChunks}${tool ? ` + ${1 + argChunks}` : ''} ` +
      `| ${fmt(text, 0)} | ${fmt(
        perStep(k, (s) => s.toolCall),
        0,
      )} | ${fmt(
        perStep(k, (s) => s.usage),
        0,
      )} ` +
      `| ${fmt(perStep(k, total), 0)} | ${fmt(textChunks / text, 1)} | ${fmt(chunks / perStep(k, total), 1)} |`
    );
  });
  const written = m(rows.map((r) => r.steps.reduce((sum, s) => sum + total(s), 0) / r.steps.length));
  const lastTwo = m(rows.map((r) => r.steps.slice(-2).reduce((sum, s) => sum + total(s), 0)));
  const afterTurn1 = m(rows.map((r) => r.afterTurn1));
  const afterTurn2 = m(rows.map((r) => r.afterTurn2));
  const stepsList = (steps: readonly string[] | undefined) => (steps ?? []).join(', ');

  const fr = reconnect.followerResume;
  const ff = reconnect.followerFresh;
  const sr = reconnect.sseResume;
  const sf = reconnect.sseFresh;
  return [
    {
      title: 'Live stream: first frame after reconnect',
      command: 'npm run bench -- --only stream',
      body: [
        'A session streams a long answer (scripted provider: ' +
          `${LONG_CHUNKS} chunks of ${LONG_CHUNK} characters, ${LONG_DELAY_MS} ms apart) through the live-stream plugin to the SQLite`,
        'delta file next to the session store (a Temporal dev server, an in-process worker; the consumers read the file',
        `through connections of their own). A first consumer follows the answer for ${SEEN_FRAMES} text frames, drops, and stays away`,
        `${AWAY_MS} ms while the answer goes on (median ${fmt(m(reconnect.missedRows), 0)} rows written meanwhile). Then, in rotated order, each`,
        'measured from the (re)connect to its first frame: a `SessionFollower` resumed with `{ from: <last position> }`,',
        "the console's `GET /api/sessions/:id/live` over HTTP (a new loopback connection, `dh ui`'s live defaults, status",
        'queries off) with `Last-Event-ID: <last position>`; baselines: the same two fresh at the log head with no delta',
        'position (`{ seq: head, delta: 0 }`, `Last-Event-ID: <head>:0`; the head read before the clock starts).',
        `Median of ${fr.length} rounds (one streamed answer each, after a warm-up round); every resumed first frame was`,
        'checked to be the text row right after the position.',
        '',
        '| first frame after (re)connect | resumed with the position | fresh at the head (`seq:0`) | resume / fresh |',
        '| --- | ---: | ---: | ---: |',
        `| \`SessionFollower\` (in-process) | ${fmt(m(fr))} ms | ${fmt(m(ff))} ms | ${ratio(fr, ff)} |`,
        `| console SSE, \`Last-Event-ID\` over HTTP | ${fmt(m(sr))} ms | ${fmt(m(sf))} ms | ${ratio(sr, sf)} |`,
        '',
        "Both kinds read the log from its start and the session's delta rows from the first one; the resumed one",
        'replays the rows up to its position silently, so resuming costs about what a fresh start does.',
      ].join('\n'),
    },
    {
      title: 'Live stream: delta rows per step and compaction',
      command: 'npm run bench -- --only stream',
      body: [
        `${ROW_SESSIONS} sessions, each a turn of ${stepCount} steps — ${TURN1_TOOL_STEPS} that stream ${STEP_TEXT_CHARS} characters of text and then an`,
        `\`echo\` call (${TOOL_ARG_CHARS}-character arguments), and an answer of ${STEP_TEXT_CHARS} characters — then a turn of 2 steps (one such`,
        `tool step, an answer). Every reply streams in ${ROW_CHUNK}-character chunks ${ROW_DELAY_MS} ms apart; the worker coalesces`,
        `what arrives within ${PUBLISH_INTERVAL_MS} ms into one row (the first of a step at once). The rows written are read as they land`,
        '(before compaction deletes them); the rows left are `channel.count` once the turn ended and the buffer was written.',
        'Medians over the sessions.',
        '',
        '| step of turn 1 | stream chunks (text + tool call) | text rows | tool-call rows | usage rows | rows | text chunks / text row | chunks / row |',
        '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
        ...stepRows,
        '',
        '| rows in the channel | rows | steps they belong to |',
        '| --- | ---: | --- |',
        `| written per step of turn 1 (mean of its ${stepCount}) | ${fmt(written, 1)} | — |`,
        `| left after turn 1 ended | ${fmt(afterTurn1, 0)} | ${stepsList(rows[0]?.afterTurn1Steps)} (their rows written: ${fmt(lastTwo, 0)}) |`,
        `| left after turn 2's second step (turn 2 ended) | ${fmt(afterTurn2, 0)} | ${stepsList(rows[0]?.afterTurn2Steps)}; turn 1: ${fmt(m(rows.map((r) => r.turn1RowsAfterTurn2)), 0)} |`,
        '',
        `${fmt(written, 1)} rows/step written, ${fmt(afterTurn1, 0)} rows left after the turn (≤ 2 steps' worth: the previous step's rows stay`,
        "so a consumer that reconnects right after its answer was logged still resumes exactly); the next turn's second",
        'step removes the rest of turn 1.',
      ].join('\n'),
    },
  ];
}
