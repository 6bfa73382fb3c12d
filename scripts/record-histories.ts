// Records the workflow histories the replay test holds every workflow change to
// (test/fixtures/histories/<scenario>.json). Existing fixtures are kept: they prove that today's code
// still replays yesterday's runs. Add a scenario here, then run `npm run fixtures:record`.
// Usage: fixtures:record [-- <scenario>...] [--out <dir>] [--force (rewrite; only for unmerged fixtures)]
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { RawValue } from '@temporalio/common';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import { SessionClient } from '../src/client/session-client.js';
import type { SessionEvent } from '../src/core/index.js';
import { bundleSessionWorkflows } from '../src/local-stack/bundle-workflows.js';
import { startDevServer, type DevServer } from '../src/local-stack/dev-server.js';
import { resolveTemporalCli } from '../src/local-stack/temporal-cli.js';
import type { Script } from '../src/scripted-provider/script.js';
import {
  closeSignal,
  compactUpdate,
  followupSignal,
  injectSignal,
  interruptSignal,
  MAX_CONTENT_PARTS,
  sendUpdate,
  sessionWorkflowId,
  steerSignal,
} from '../src/shared/session-messages.js';
import type { agentSession } from '../src/workflows/session-workflow.js';
import { evalRun } from '../src/workflows/eval-workflow.js';
import { planEvalTargets } from '../src/eval/plan-eval.js';
import {
  historyToJSONObject,
  startScenarioRuntime,
  waitForLog,
  waitForState,
  waitForTurnEnd,
  type ScenarioRuntime,
} from '../test/helpers/scenario-runtime.js';
import { echoTool, quickVariant, sleepTool } from '../test/helpers/test-tools.js';
import { createDelegateTool } from '../src/tools/delegate.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DEFAULT_OUT = join(ROOT, 'test', 'fixtures', 'histories');
/** Fixed names, so a re-recorded fixture differs from its predecessor only where the run did. */
const TASK_QUEUE = 'dh-fixtures';
const IDENTITY = 'dh-fixtures';
/** The continue-as-new scenario's server suggests continue-as-new past this many history events. */
const SUGGEST_CONTINUE_AS_NEW_AT = 15;

type SessionHandle = WorkflowHandle<typeof agentSession>;

interface Scenario {
  /** Fixture file base name; a scenario with several runs writes `<name>.run-<n>.json`. */
  readonly name: string;
  /** How many workflow runs the scenario makes (more than one only with continue-as-new). */
  readonly runs?: number;
  /** Starts the session and plays the scenario; the session is closed afterwards unless it already completed. */
  readonly play: (rt: ScenarioRuntime, sessionId: string) => Promise<SessionHandle>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [`${e.turn}:${e.reason}`] : []));
function expectThat(condition: boolean, what: string): void {
  if (!condition) throw new Error(`scenario check failed: ${what}`);
}
/** An argument sent as this payload, as is (the client's converter passes a RawValue through). */
const rawPayload = (encoding: string, data: Uint8Array): RawValue =>
  RawValue.fromPayload({ metadata: { encoding: Buffer.from(encoding) }, data });

// Every scenario has its own trigger words, so the shared provider's replies cannot cross over.
const SCRIPT: Script = {
  mode: 'match',
  replies: [
    { match: { lastUserContains: 'alpha' }, text: 'one' },
    { match: { lastUserContains: 'beta' }, text: 'two' },
    { match: { lastUserContains: 'gamma' }, text: 'three' },
    { match: { lastUserContains: 'echo please' }, toolCalls: [{ id: 'e1', name: 'echo', arguments: '{"text":"hi"}' }] },
    { match: { lastUserContains: 'echo please' }, text: 'echoed' },
    // The eval scenario: its session's two steps, then the two candidates of the run that sends them again.
    {
      match: { lastUserContains: 'zeta to evaluate' },
      toolCalls: [{ id: 'z1', name: 'echo', arguments: '{"text":"z"}' }],
    },
    { match: { lastUserContains: 'zeta to evaluate' }, text: 'zeta done' },
    { match: { lastUserContains: 'zeta to evaluate' }, text: 'a candidate' },
    { match: { lastUserContains: 'zeta to evaluate' }, text: 'another candidate' },
    {
      match: { lastUserContains: 'echo in the model step' },
      toolCalls: [
        { id: 'q1', name: 'echo', arguments: '{"text":"one"}' },
        { id: 'q2', name: 'echo', arguments: '{"text":"two"}' },
      ],
      repeat: 2,
    },
    { match: { lastUserContains: 'echo in the model step' }, text: 'echoed in the model step' },
    { match: { lastUserContains: 'on the host' }, toolCalls: [{ id: 'h1', name: 'echo', arguments: '{"text":"h"}' }] },
    { match: { lastUserContains: 'on the host' }, text: 'answered on the host' },
    { match: { lastUserContains: 'host moved' }, text: 'answered on the shared queue' },
    { match: { lastUserContains: 'delta' }, text: 'four' },
    { match: { lastUserContains: 'epsilon' }, toolCalls: [{ id: 'x1', name: 'echo', arguments: '{"text":"five"}' }] },
    { match: { lastUserContains: 'epsilon' }, text: 'five' },
    {
      match: { lastUserContains: 'long quick tool' },
      toolCalls: [
        { id: 'qt1', name: 'quick_sleep', arguments: '{"ms":20000}' },
        { id: 'qt2', name: 'echo', arguments: '{"text":"x"}' },
      ],
    },
    {
      match: { lastUserContains: 'sleep a little' },
      toolCalls: [{ id: 's1', name: 'sleep', arguments: '{"ms":1500}' }],
    },
    { match: { lastUserContains: 'YAML' }, text: 'Switching to YAML.' },
    { match: { lastUserContains: 'status please' }, text: 'all good' },
    { match: { lastUserContains: 'branch is main' }, text: 'noted the branch' },
    { match: { lastUserContains: 'slow answer' }, text: 'a slow answer', delayMs: 1500 },
    { match: { lastUserContains: 'tests pass' }, text: 'good to know' },
    {
      match: { lastUserContains: 'stream slowly' },
      text: 'word '.repeat(200),
      chunkSize: 5,
      chunkDelayMs: 50,
      repeat: 2,
    },
    { match: { lastUserContains: 'after the interrupt' }, text: 'fresh turn' },
    { match: { lastUserContains: 'busy stream' }, text: 'busy '.repeat(120), chunkSize: 5, chunkDelayMs: 50 },
    { match: { lastUserContains: 'busy steer' }, text: 'steered while busy' },
    { match: { lastUserContains: 'busy followup' }, text: 'followed up while busy' },
    {
      match: { lastUserContains: 'long tool' },
      toolCalls: [
        { id: 't1', name: 'sleep', arguments: '{"ms":20000}' },
        { id: 't2', name: 'echo', arguments: '{"text":"x"}' },
      ],
    },
    {
      match: { lastUserContains: 'loop' },
      toolCalls: [{ id: 'l1', name: 'echo', arguments: '{"text":"loop"}' }],
      repeat: 2,
    },
    { match: { lastUserContains: 'dup' }, text: 'once' },
    { match: { lastUserContains: 'still alive' }, text: 'yes' },
    { match: { lastUserContains: 'bye' }, text: 'goodbye' },
    { match: { lastUserContains: 'via update' }, text: 'hello' },
    { match: { lastUserContains: 'via signal' }, text: 'hello again' },
    { match: { lastUserContains: 'carry on' }, text: 'first run' },
    { match: { lastUserContains: 'after the carry' }, text: 'second run' },
    { match: { lastUserContains: 'past the poison' }, text: 'unharmed' },
    { match: { lastUserContains: 'past the limit' }, text: 'counted' },
    { match: { lastUserContains: 'cut short' }, text: 'This answer goes on and on until it', finishReason: 'length' },
    { match: { lastUserContains: 'after the cut' }, text: 'whole' },
    {
      match: { lastUserContains: 'delegate twice' },
      toolCalls: [
        { id: 'd1', name: 'delegate', arguments: { task: 'subtask one: use echo', tools: ['echo'] } },
        { id: 'd2', name: 'delegate', arguments: { task: 'subtask two: just answer' } },
      ],
    },
    {
      match: { lastUserContains: 'subtask one' },
      toolCalls: [{ id: 'e1', name: 'echo', arguments: '{"text":"one"}' }],
    },
    { match: { lastUserContains: 'subtask one' }, text: 'sub one done' },
    { match: { lastUserContains: 'subtask two' }, text: 'sub two done' },
    { match: { lastUserContains: 'delegate twice' }, text: 'delegated' },
    {
      match: { lastUserContains: 'delegate once' },
      toolCalls: [{ id: 'd3', name: 'delegate', arguments: { task: 'subtask three: echo and answer' } }],
    },
    {
      match: { lastUserContains: 'subtask three' },
      toolCalls: [{ id: 'e2', name: 'echo', arguments: '{"text":"3"}' }],
    },
    { match: { lastUserContains: 'subtask three' }, text: 'sub three done' },
    { match: { lastUserContains: 'delegate once' }, text: 'delegated once' },
    {
      match: { lastUserContains: 'delegate then stop' },
      toolCalls: [{ id: 'd4', name: 'delegate', arguments: { task: 'subtask four: stream on' } }],
    },
    { match: { lastUserContains: 'subtask four' }, text: 'word '.repeat(400), chunkSize: 5, chunkDelayMs: 50 },
    { match: { lastUserContains: 'parent steer while a child runs' }, text: 'the steer ran after the interrupt' },
  ],
};

const SCENARIOS: readonly Scenario[] = [
  {
    name: 'followups',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      for (const content of ['alpha', 'beta', 'gamma']) await handle.signal(followupSignal, { content });
      const events = await waitForTurnEnd(rt.store, id, 3);
      expectThat(turnEnds(events).join() === '1:completed,2:completed,3:completed', 'three completed turns');
      return handle;
    },
  },
  {
    name: 'tool-echo',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'echo please' });
      const events = await waitForTurnEnd(rt.store, id, 1);
      expectThat(
        events.some((e) => e.type === 'tool/result' && e.status === 'ok'),
        'the echo result is logged',
      );
      return handle;
    },
  },
  {
    // Recorded after openSession became a local activity (patch 'open-session-local'): a marker, not an
    // activity, opens the session, and the first model step is scheduled by the first workflow task.
    name: 'open-session-local',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'echo please' });
      await handle.signal(followupSignal, { content: 'alpha' });
      const events = await waitForTurnEnd(rt.store, id, 2);
      expectThat(turnEnds(events).join() === '1:completed,2:completed', 'two completed turns');
      return handle;
    },
  },
  {
    name: 'steer-mid-turn',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'sleep a little' });
      await waitForLog(rt.store, id, (events) => events.some((e) => e.type === 'tool/start'), 'the tool start');
      await handle.signal(steerSignal, { content: 'Use YAML, not JSON.' });
      const events = await waitForTurnEnd(rt.store, id, 1);
      expectThat(
        events.some((e) => e.type === 'user/message' && e.turn === 1 && e.step === 2),
        'the steer lands at step 2 of turn 1',
      );
      return handle;
    },
  },
  {
    name: 'inject-idle-then-followup',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(injectSignal, { content: 'The branch is main.', source: 'ci-bot' });
      await waitForState(handle, (s) => s.queues.notYetLogged === 0 && s.queues.nextStep === 1);
      await handle.signal(followupSignal, { content: 'status please' });
      const events = await waitForTurnEnd(rt.store, id, 1);
      expectThat(events.filter((e) => e.type === 'user/message').length === 2, 'followup and inject enter turn 1');
      return handle;
    },
  },
  {
    name: 'inject-mid-turn',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'slow answer' });
      await waitForState(handle, (s) => s.status === 'running');
      await handle.signal(injectSignal, { content: 'The tests pass.', source: 'ci-bot' });
      const events = await waitForTurnEnd(rt.store, id, 1);
      expectThat(events.filter((e) => e.type === 'step/start').length === 2, 'the inject keeps the turn open a step');
      return handle;
    },
  },
  {
    // A steer and a followup accepted while the answer streams are logged before the answer is (the
    // concurrent appendInbox of patch ingress-logged-while-busy); the steer enters step 2, the followup turn 2.
    name: 'logged-while-busy',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'busy stream' });
      await waitForState(handle, (s) => s.status === 'running');
      await handle.signal(steerSignal, { content: 'busy steer', messageId: 'busy-steer' });
      await handle.signal(followupSignal, { content: 'busy followup', messageId: 'busy-followup' });
      const during = await waitForLog(
        rt.store,
        id,
        (events) => events.filter((e) => e.type === 'inbox/enqueue').length === 3,
        'both messages logged',
      );
      expectThat(!during.some((e) => e.type === 'assistant/message'), 'logged while the answer streams');
      const events = await waitForTurnEnd(rt.store, id, 2);
      expectThat(
        events.some((e) => e.type === 'user/message' && e.messageId === 'busy-steer' && e.turn === 1 && e.step === 2),
        'the steer enters step 2 of turn 1',
      );
      expectThat(
        events.some((e) => e.type === 'user/message' && e.messageId === 'busy-followup' && e.turn === 2),
        'the followup runs turn 2',
      );
      return handle;
    },
  },
  {
    name: 'interrupt-streaming',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'stream slowly' });
      await waitForState(handle, (s) => s.status === 'running');
      await sleep(1_000); // the answer is streaming now
      await handle.signal(interruptSignal);
      const events = await waitForTurnEnd(rt.store, id, 1);
      expectThat(turnEnds(events).join() === '1:aborted', 'the turn ends aborted');
      expectThat(
        events.some((e) => e.type === 'assistant/message' && e.interrupted === true),
        'the partial answer is logged',
      );
      return handle;
    },
  },
  {
    name: 'interrupt-tool',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'long tool' });
      await waitForLog(rt.store, id, (events) => events.some((e) => e.type === 'tool/start'), 'the tool start');
      await handle.signal(interruptSignal);
      const events = await waitForTurnEnd(rt.store, id, 1);
      const results = events.flatMap((e) => (e.type === 'tool/result' ? [`${e.callId}:${e.status}`] : []));
      expectThat(results.join() === 't1:interrupted,t2:skipped', 'the started tool is interrupted, the other skipped');
      return handle;
    },
  },
  {
    name: 'tools-in-model-step',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'echo in the model step' });
      const events = await waitForTurnEnd(rt.store, id, 1);
      const results = events.flatMap((e) => (e.type === 'tool/result' ? [`${e.callId}:${e.status}`] : []));
      expectThat(results.join() === 'q1:ok,q2:ok,q1:ok,q2:ok', 'two tool steps of two echo calls each');
      return handle;
    },
  },
  {
    name: 'turns-closed-locally',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      for (const content of ['delta', 'epsilon']) await handle.signal(followupSignal, { content });
      const events = await waitForTurnEnd(rt.store, id, 2);
      expectThat(turnEnds(events).join() === '1:completed,2:completed', 'two completed turns');
      return handle;
    },
  },
  {
    name: 'interrupt-quick-tool',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'long quick tool' });
      await waitForLog(rt.store, id, (events) => events.some((e) => e.type === 'tool/start'), 'the tool start');
      await handle.signal(interruptSignal);
      const events = await waitForTurnEnd(rt.store, id, 1);
      const results = events.flatMap((e) => (e.type === 'tool/result' ? [`${e.callId}:${e.status}`] : []));
      expectThat(
        results.join() === 'qt1:interrupted,qt2:skipped',
        'the started tool is interrupted, the other skipped',
      );
      return handle;
    },
  },
  {
    name: 'interrupt-downgraded-steer',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'stream slowly' });
      await waitForState(handle, (s) => s.status === 'running');
      await sleep(1_000);
      await handle.signal(interruptSignal);
      const receipt = await handle.executeUpdate(sendUpdate, {
        args: [{ content: 'after the interrupt, do this', target: 'next-step', wakeup: true }],
      });
      expectThat(receipt.downgraded && receipt.target === 'next-turn', 'the steer is downgraded to the next turn');
      const events = await waitForTurnEnd(rt.store, id, 2);
      expectThat(turnEnds(events).join() === '1:aborted,2:completed', 'an aborted turn, then a fresh one');
      return handle;
    },
  },
  {
    name: 'duplicate-message-id',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      const payload = { messageId: 'm-1', content: 'dup', target: 'next-turn', wakeup: true } as const;
      const first = await handle.executeUpdate(sendUpdate, { args: [payload] });
      const again = await handle.executeUpdate(sendUpdate, { args: [payload] });
      await handle.signal(followupSignal, { messageId: 'm-1', content: 'dup' });
      expectThat(!first.duplicate && again.duplicate, 'the second send is a duplicate');
      await waitForTurnEnd(rt.store, id, 1);
      const events = await rt.store.read(id);
      expectThat(events.filter((e) => e.type === 'inbox/enqueue').length === 1, 'queued once');
      return handle;
    },
  },
  {
    name: 'invalid-signals',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 42 });
      await handle.signal(steerSignal, { text: 'wrong field' });
      await waitForState(handle, (s) => s.rejectedSignals === 2);
      await handle.signal(followupSignal, { content: 'still alive?' });
      await waitForTurnEnd(rt.store, id, 1);
      return handle;
    },
  },
  {
    // Payloads the workflow cannot decode, refused in its handlers (raw signal and update arguments):
    // a replay must refuse them again, never fail on them.
    name: 'poison-payloads',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, rawPayload('weird/enc', Buffer.from('{"content":"alpha"}')));
      await handle.signal(steerSignal, rawPayload('json/plain', Buffer.from([0xd7, 0x6d, 0xf8])));
      // (No inject: the replay test's incompatible variant drops injects and expects each fixture with one to fail.)
      await handle.signal(followupSignal, rawPayload('binary/protobuf', Buffer.from([0x0a, 0x01, 0x78])));
      await handle
        .executeUpdate(compactUpdate, { args: [rawPayload('json/protobuf', Buffer.from('{}')) as never] })
        .then(
          () => expectThat(false, 'the poison compact request is refused'),
          () => undefined,
        );
      await handle.signal(interruptSignal, rawPayload('weird/enc', Buffer.from('x')));
      await waitForState(handle, (s) => s.rejectedSignals === 3);
      await handle.signal(followupSignal, { content: 'past the poison' });
      const events = await waitForTurnEnd(rt.store, id, 1);
      expectThat(turnEnds(events).join() === '1:completed', 'the valid followup runs a turn');
      return handle;
    },
  },
  {
    // A followup the content limit in characters refuses (more parts than MAX_CONTENT_PARTS) and the limit
    // before it (the JSON form) accepted: decided behind patch 'content-limit-characters', whose marker
    // this history records.
    name: 'content-limit-characters',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      const parts = Array.from({ length: MAX_CONTENT_PARTS + 1 }, () => ({ type: 'text' as const, text: 'a' }));
      await handle.signal(followupSignal, { content: parts });
      const state = await waitForState(handle, (s) => s.rejectedSignals === 1);
      expectThat(/more than/.test(state.lastRejection ?? ''), 'the followup is refused for its parts');
      await handle.signal(followupSignal, { content: 'past the limit' });
      const events = await waitForTurnEnd(rt.store, id, 1);
      expectThat(turnEnds(events).join() === '1:completed', 'the valid followup runs a turn');
      return handle;
    },
  },
  {
    name: 'max-steps',
    play: async (rt, id) => {
      const handle = await rt.start(id, { maxStepsPerTurn: 2 });
      await handle.signal(followupSignal, { content: 'loop' });
      const events = await waitForTurnEnd(rt.store, id, 1);
      expectThat(turnEnds(events).join() === '1:max-steps', 'the turn ends at max-steps');
      return handle;
    },
  },
  {
    // Recorded with the patch 'truncated-answer-ends-turn': an answer cut at its output limit ends its turn
    // `truncated` (before the patch, `completed`); the next followup runs a turn as usual.
    name: 'truncated-answer',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'cut short' });
      await waitForTurnEnd(rt.store, id, 1);
      const state = await waitForState(handle, (s) => s.lastTurnEnd?.turn === 1);
      expectThat(state.lastTurnEnd?.reason === 'truncated', 'the state reports the truncated turn');
      await handle.signal(followupSignal, { content: 'after the cut' });
      const events = await waitForTurnEnd(rt.store, id, 2);
      expectThat(turnEnds(events).join() === '1:truncated,2:completed', 'the cut answer ends its turn truncated');
      return handle;
    },
  },
  {
    name: 'budget-refused',
    play: async (rt, id) => {
      const handle = await rt.start(id, { maxSessionSteps: 1 });
      await handle.signal(followupSignal, { content: 'bye' });
      await waitForTurnEnd(rt.store, id, 1);
      // The budget is spent: this followup gets one refused turn that consumes it, then the session idles.
      await handle.signal(followupSignal, { content: 'bye again' });
      const events = await waitForTurnEnd(rt.store, id, 2);
      expectThat(turnEnds(events).join() === '1:completed,2:budget', 'the second turn is refused by the budget');
      return handle;
    },
  },
  {
    name: 'close-drains',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      // The close arrives before the turn runs: the accepted followup still runs, then the workflow completes.
      await handle.signal(followupSignal, { content: 'bye' });
      await handle.signal(closeSignal);
      const result = await handle.result();
      expectThat(result.turns === 1 && result.closedBy === 'close', 'one turn, closed by close');
      expectThat(turnEnds(await rt.store.read(id)).join() === '1:completed', 'the turn completed');
      return handle;
    },
  },
  {
    // An inject still queued at close is discarded (patch discard-queued-at-close): its fate is in the log.
    name: 'discard-queued-at-close',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(injectSignal, { content: 'nobody will read this', messageId: 'orphan' });
      await waitForLog(rt.store, id, (events) => events.some((e) => e.type === 'inbox/enqueue'), 'the inject');
      await handle.signal(closeSignal);
      await handle.result();
      expectThat(
        (await rt.store.read(id)).some((e) => e.type === 'inbox/discard' && e.messageIds.includes('orphan')),
        'the inject is discarded at close',
      );
      return handle;
    },
  },
  {
    name: 'update-with-start',
    play: async (rt, id) => {
      const sessions = new SessionClient(rt.client, { taskQueue: rt.taskQueue });
      const receipt = await sessions.send(
        id,
        { content: 'hello via update', target: 'next-turn', wakeup: true },
        { start: true },
      );
      expectThat(receipt.position === 0 && !receipt.duplicate, 'the first message is at position 0');
      await waitForTurnEnd(rt.store, id, 1);
      return sessions.handle(id);
    },
  },
  {
    name: 'signal-with-start',
    play: async (rt, id) => {
      const sessions = new SessionClient(rt.client, { taskQueue: rt.taskQueue });
      await sessions.steer(id, 'hello via signal', { start: true });
      await waitForTurnEnd(rt.store, id, 1);
      return sessions.handle(id);
    },
  },
  {
    // Recorded after subagents existed (patch 'subagent-children'): two child workflows started in one step.
    name: 'subagents',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'delegate twice' });
      const events = await waitForTurnEnd(rt.store, id, 1, 60_000);
      expectThat(turnEnds(events).join() === '1:completed', 'the delegating turn completed');
      const answered = events.filter((e) => e.type === 'tool/result' && e.child?.reason === 'completed');
      expectThat(answered.length === 2, 'both children answered');
      return handle;
    },
  },
  {
    // A child's own history: opened with its delegation, one task turn with a tool call, then it completes.
    name: 'subagent-child',
    play: async (rt, id) => {
      const parent = await rt.start(`${id}-parent`);
      await parent.signal(followupSignal, { content: 'delegate once' });
      const events = await waitForTurnEnd(rt.store, `${id}-parent`, 1, 60_000);
      const start = events.find((e) => e.type === 'tool/start' && e.child !== undefined);
      if (start?.type !== 'tool/start' || start.child === undefined) throw new Error('no child was started');
      const child = rt.client.workflow.getHandle<typeof agentSession>(sessionWorkflowId(start.child));
      const result = await child.result();
      expectThat(result.closedBy === 'delegation' && result.turns === 1, 'the child ran its task turn and completed');
      await parent.signal(closeSignal);
      return child;
    },
  },
  {
    // An interrupt passed on to a running child (signals to it, a timer between them), then both turns aborted.
    name: 'subagent-interrupt',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'delegate then stop' });
      const child = `${id}.d1-1-0`;
      await waitForLog(rt.store, child, (log) => log.some((e) => e.type === 'request/sent'), 'the child streaming');
      await sleep(500);
      await handle.signal(interruptSignal);
      const events = await waitForTurnEnd(rt.store, id, 1, 60_000);
      expectThat(turnEnds(events).join() === '1:aborted', 'the parent turn aborted');
      expectThat(turnEnds(await rt.store.read(child)).join() === '1:aborted', 'the child turn aborted');
      return handle;
    },
  },
  {
    // A steer to the parent while its subagent streams: no activity of the parent runs, and the steer is logged
    // at once all the same (patch ingress-logged-while-busy); the interrupt then ends both turns, the steer runs next.
    name: 'logged-while-children-run',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'delegate then stop' });
      const child = `${id}.d1-1-0`;
      await waitForLog(rt.store, child, (log) => log.some((e) => e.type === 'request/sent'), 'the child streaming');
      await handle.signal(steerSignal, { content: 'parent steer while a child runs', messageId: 'parent-steer' });
      const during = await waitForLog(
        rt.store,
        id,
        (log) => log.some((e) => e.type === 'inbox/enqueue' && e.messageId === 'parent-steer'),
        "the parent's steer logged",
      );
      expectThat(!during.some((e) => e.type === 'tool/result'), 'logged while the child still runs');
      await handle.signal(interruptSignal);
      const events = await waitForTurnEnd(rt.store, id, 2, 60_000);
      expectThat(turnEnds(events).join() === '1:aborted,2:completed', 'the steer ran as turn 2');
      return handle;
    },
  },
  {
    // A run started on code with the baseline patch: one patch marker for every patch it covers (a tool step
    // on the host, a turn closed locally, an inject queued at close and discarded).
    name: 'baseline-patches',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'echo please' });
      await waitForTurnEnd(rt.store, id, 1);
      await handle.signal(injectSignal, { content: 'left for nobody', messageId: 'left' });
      await waitForLog(
        rt.store,
        id,
        (events) => events.some((e) => e.type === 'inbox/enqueue' && e.messageId === 'left'),
        'the inject',
      );
      await handle.signal(closeSignal);
      await handle.result();
      const patches = (await handle.fetchHistory()).events?.filter(
        (e) => e.markerRecordedEventAttributes?.markerName === 'core_patch',
      );
      expectThat(patches?.length === 1, `one patch marker, not ${patches?.length}`);
      expectThat(
        (await rt.store.read(id)).some((e) => e.type === 'inbox/discard' && e.messageIds.includes('left')),
        'the inject is discarded at close',
      );
      return handle;
    },
  },
  {
    // Model steps on the host's model queue (patch model-step-on-host); then the host's worker is replaced by
    // another host's, and the next turn's step times out there unstarted and runs on the shared model queue.
    // Last: the runtime's worker stays on the other host for whatever is recorded after it.
    name: 'model-step-on-host',
    play: async (rt, id) => {
      const handle = await rt.start(id);
      await handle.signal(followupSignal, { content: 'answer on the host' });
      await waitForTurnEnd(rt.store, id, 1);
      await rt.replaceWorker('fixture-other-host');
      await handle.signal(followupSignal, { content: 'the host moved' });
      const events = await waitForTurnEnd(rt.store, id, 2, 60_000);
      expectThat(turnEnds(events).join() === '1:completed,2:completed', 'both turns completed');
      return handle;
    },
  },
  {
    // Signals held since the start (the worker stopped while they were sent) reach the run in its first task:
    // handled in arrival order since patch 'signals-in-arrival-order', so the inject after the close is refused.
    name: 'signals-held-at-start',
    play: async (rt, id) => {
      let handle: SessionHandle | undefined;
      await rt.replaceWorker('fixture-host', async () => {
        handle = await rt.start(id);
        await handle.signal(injectSignal, { content: 'said before the close', messageId: 'early' });
        await handle.signal(closeSignal, { reason: 'done' });
        await handle.signal(injectSignal, { content: 'said after the close', messageId: 'after' });
      });
      if (handle === undefined) throw new Error('the session was not started');
      await handle.result();
      return handle;
    },
  },
  {
    // An eval run (dh eval): a recorded session's two steps sent again with another model, two at a time.
    name: 'eval-run',
    play: async (rt, id) => {
      const source = `${id}-source`;
      const session = await rt.start(source);
      await session.signal(followupSignal, { content: 'zeta to evaluate' });
      await waitForTurnEnd(rt.store, source, 1);
      await session.signal(closeSignal);
      await session.result();
      const { targets } = await planEvalTargets((sid) => rt.store.read(sid), [source], { runId: id, at: 'step' });
      expectThat(targets.length === 2, `two recorded steps, not ${targets.length}`);
      const handle = await rt.client.workflow.start(evalRun, {
        taskQueue: TASK_QUEUE,
        workflowId: id,
        args: [{ runId: id, change: { model: 'scripted-model-2' }, targets, concurrency: 2, at: Date.now() }],
      });
      const result = await handle.result();
      expectThat(
        result.outcomes.every((o) => o.status === 'answered'),
        `both steps answered: ${JSON.stringify(result.outcomes.map((o) => o.reason ?? o.status))}`,
      );
      return handle as unknown as SessionHandle;
    },
  },
];

/** Runs on its own server, which suggests continue-as-new early: one turn per run. */
const CONTINUE_AS_NEW: Scenario = {
  name: 'continue-as-new',
  runs: 2,
  play: async (rt, id) => {
    const handle = await rt.start(id);
    const first = rt.client.workflow.getHandle(sessionWorkflowId(id), (await handle.describe()).runId);
    await handle.signal(followupSignal, { content: 'carry on' });
    await waitForTurnEnd(rt.store, id, 1);
    for (let i = 0; (await first.describe()).status.name !== 'CONTINUED_AS_NEW'; i++) {
      if (i > 200) throw new Error('the first run never continued as new');
      await sleep(100);
    }
    // Sent together, so the second run drains the followup and completes instead of continuing again.
    await handle.signal(followupSignal, { content: 'after the carry' });
    await handle.signal(closeSignal);
    const result = await handle.result();
    expectThat(result.turns === 2, 'two turns across the runs');
    return handle;
  },
};

/** Every history of the workflow, first run first, following continue-as-new. */
async function fetchRuns(client: Client, workflowId: string, firstRunId: string): Promise<History[]> {
  const runs: History[] = [];
  for (let runId: string | null | undefined = firstRunId; runId;) {
    const history: History = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    runs.push(history);
    const last = history.events?.at(-1);
    runId = last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
  }
  return runs;
}

/**
 * The SDK's JSON form (what `historyFromJSON` and `Worker.runReplayHistories` read), indented for
 * reviewable diffs. Worker and client identities and sticky queue names carry pid@hostname; they become
 * fixed names (replay ignores them).
 */
function toFixtureJSON(history: History): string {
  const scrub = (value: unknown, key = ''): unknown => {
    if (Array.isArray(value)) return value.map((v) => scrub(v));
    if (key === 'identity' && typeof value === 'string') return IDENTITY;
    if (value === null || typeof value !== 'object') return value;
    const fields = Object.entries(value);
    if (key === 'taskQueue' && fields.some(([k, v]) => k === 'kind' && v === 'TASK_QUEUE_KIND_STICKY')) {
      return { ...value, name: `${IDENTITY}-sticky` };
    }
    return Object.fromEntries(fields.map(([k, v]) => [k, scrub(v, k)]));
  };
  return `${JSON.stringify(scrub(historyToJSONObject(history)), null, 2)}\n`;
}

/** Paths inside the repository are shown relative to it. */
const shown = (file: string): string => (relative(ROOT, file).startsWith('..') ? file : relative(ROOT, file));

function fixtureFiles(scenario: Scenario, out: string): string[] {
  const runs = scenario.runs ?? 1;
  if (runs === 1) return [join(out, `${scenario.name}.json`)];
  return Array.from({ length: runs }, (_, i) => join(out, `${scenario.name}.run-${i + 1}.json`));
}

async function record(rt: ScenarioRuntime, scenario: Scenario, out: string): Promise<void> {
  const sessionId = `fixture-${scenario.name}`;
  const handle = await scenario.play(rt, sessionId);
  if ((await handle.describe()).status.name === 'RUNNING') await handle.signal(closeSignal);
  await handle.result();
  // The last run's start event names the first run; walk forward from there.
  const latest = await handle.fetchHistory();
  const firstRunId = latest.events?.[0]?.workflowExecutionStartedEventAttributes?.firstExecutionRunId;
  if (!firstRunId) throw new Error(`${scenario.name}: the history does not name its first run`);
  const runs = await fetchRuns(rt.client, handle.workflowId, firstRunId);
  const files = fixtureFiles(scenario, out);
  if (runs.length !== files.length) {
    throw new Error(`${scenario.name}: expected ${files.length} run(s), the workflow made ${runs.length}`);
  }
  for (const [i, history] of runs.entries()) {
    const file = files[i] as string;
    const text = toFixtureJSON(history);
    writeFileSync(file, text);
    const size = `${(Buffer.byteLength(text) / 1024).toFixed(1)} KiB`;
    console.log(`wrote ${shown(file)} (${history.events?.length ?? 0} events, ${size})`);
  }
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      force: { type: 'boolean', default: false },
      out: { type: 'string', default: DEFAULT_OUT },
    },
  });
  const out = resolve(values.out);
  const all = [...SCENARIOS, CONTINUE_AS_NEW];
  const unknown = positionals.filter((name) => !all.some((s) => s.name === name));
  if (unknown.length > 0) {
    throw new Error(`unknown scenario(s): ${unknown.join(', ')}; known: ${all.map((s) => s.name).join(', ')}`);
  }
  const chosen = all.filter((s) => positionals.length === 0 || positionals.includes(s.name));
  const todo = chosen.filter((s) => values.force || fixtureFiles(s, out).some((file) => !existsSync(file)));
  for (const s of chosen.filter((s) => !todo.includes(s))) {
    const files = fixtureFiles(s, out).map(shown);
    console.log(`kept ${files.join(', ')} (exists; --force rewrites)`);
  }
  if (todo.length === 0) return;
  mkdirSync(out, { recursive: true });
  // Before the first worker: the SDK's info lines would bury the list of written files.
  Runtime.install({ logger: new DefaultLogger('WARN') });

  const cliPath = await resolveTemporalCli({ log: (line) => console.log(line) });
  const { codePath } = await bundleSessionWorkflows();
  const scratch = mkdtempSync(join(tmpdir(), 'dh-record-'));
  const stops: Array<() => Promise<void>> = [
    () => {
      rmSync(dirname(codePath), { recursive: true, force: true });
      rmSync(scratch, { recursive: true, force: true });
      return Promise.resolve();
    },
  ];
  const runtimeOn = async (server: DevServer) => {
    const rt = await startScenarioRuntime({
      address: server.address,
      namespace: server.namespace,
      workflowBundlePath: codePath,
      taskQueue: TASK_QUEUE,
      clientIdentity: IDENTITY,
      script: SCRIPT,
      tools: [
        echoTool,
        sleepTool(join(scratch, 'sleep-runs.log')),
        quickVariant(sleepTool(join(scratch, 'sleep-runs.log'))),
        createDelegateTool({ maxDepth: 1 }),
      ],
    });
    stops.push(() => rt.stop());
    return rt;
  };
  try {
    const plain = todo.filter((s) => s !== CONTINUE_AS_NEW);
    if (plain.length > 0) {
      const server = await startDevServer({ cliPath });
      stops.push(server.stop);
      const rt = await runtimeOn(server);
      for (const scenario of plain) await record(rt, scenario, out);
    }
    if (todo.includes(CONTINUE_AS_NEW)) {
      const server = await startDevServer({
        cliPath,
        dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': SUGGEST_CONTINUE_AS_NEW_AT },
      });
      stops.push(server.stop);
      await record(await runtimeOn(server), CONTINUE_AS_NEW, out);
    }
  } finally {
    for (const stop of stops.reverse()) await stop();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exitCode = 1;
});
