// What a session keeps across continue-as-new: the `state` query of a continued run reports the whole
// session (last turn end, usage, compactions, refused signals), and session budgets keep counting.
import { defaultPayloadConverter } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPACTION_INSTRUCTION, type SessionEvent } from '../../src/core/index.js';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import {
  compactUpdate,
  followupSignal,
  MessageSignalPayload,
  payloadProblem,
  sessionWorkflowId,
  stateQuery,
} from '../../src/shared/session-messages.js';
import type { SessionCarry, SessionWorkflowInput } from '../../src/shared/session-workflow-input.js';
import type { agentSession } from '../../src/workflows/session-workflow.js';
import { waitForLog } from '../helpers/scenario-runtime.js';
import { echoTool } from '../helpers/test-tools.js';
import {
  expectProviderSawTheLog,
  type Harness,
  startHarnessOnOwnServer,
  waitForState,
  waitForTurnEnd,
} from '../helpers/session-harness.js';

type SessionHandle = WorkflowHandle<typeof agentSession>;

const SUMMARIZE = COMPACTION_INSTRUCTION.slice(0, 40);
const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [`${e.turn}:${e.reason}`] : []));
const appliedCompactions = (events: readonly SessionEvent[]) =>
  events.filter((e) => e.type === 'compact/end' && e.outcome === 'applied').length;
/** Usage summed over the log's assistant messages (what the workflow adds up step by step). */
function loggedUsage(events: readonly SessionEvent[]) {
  const sum = { inputUncached: 0, cacheRead: 0, output: 0, reasoning: 0 };
  for (const e of events) {
    if (e.type !== 'assistant/message' || !e.usage) continue;
    sum.inputUncached += e.usage.inputUncached;
    sum.cacheRead += e.usage.cacheRead;
    sum.output += e.usage.output;
    sum.reasoning += e.usage.reasoning;
  }
  return sum;
}

/** A followup the workflow refuses (unknown key); the key is long, so the refusal is too. */
const REFUSED = { content: 'never queued', ['k'.repeat(1_000)]: 1 };
const refusedParse = MessageSignalPayload.safeParse(REFUSED);
const REFUSAL = `followup: ${refusedParse.success ? '' : payloadProblem(refusedParse.error)}`;

describe('state and session budgets across continue-as-new', () => {
  let h: Harness;
  beforeAll(async () => {
    const spend = { prompt_tokens: 1_000, completion_tokens: 0, total_tokens: 1_000 };
    // Suggest continue-as-new early: a run holds a few turns at most.
    h = await startHarnessOnOwnServer(
      { 'limit.historyCount.suggestContinueAsNew': 30 },
      {
        script: {
          mode: 'match',
          replies: [
            { match: { lastUserContains: SUMMARIZE }, text: 'The user chatted; nothing is pending.', repeat: 10 },
            { match: { lastUserContains: 'chat' }, text: 'chatted', repeat: 20 },
            { match: { lastUserContains: 'count steps' }, text: 'counted', repeat: 3 },
            { match: { lastUserContains: 'one more step' }, toolCalls: [{ id: 's', name: 'echo', arguments: '{}' }] },
            { match: { lastUserContains: 'spend' }, text: 'spent', usage: spend, repeat: 3 },
            {
              match: { lastUserContains: 'spend' },
              toolCalls: [{ id: 't', name: 'echo', arguments: '{}' }],
              usage: spend,
            },
          ],
        },
        tools: [echoTool],
      },
    );
  }, 120_000);
  afterAll(async () => h?.stop());

  /** The input of the session's current run (the carry is absent only in the first run). */
  async function currentInput(sessionId: string): Promise<{ runId: string; input: SessionWorkflowInput }> {
    const workflowId = sessionWorkflowId(sessionId);
    const { runId } = await h.client.workflow.getHandle(workflowId).describe();
    const history = await h.client.workflow.getHandle(workflowId, runId).fetchHistory();
    const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    if (!payload) throw new Error(`${sessionId}: run ${runId} has no input`);
    return { runId, input: defaultPayloadConverter.fromPayload<SessionWorkflowInput>(payload) };
  }

  /**
   * Sends refused signals until the current run is one that started after `ready` held: everything it
   * knows about earlier work came through the carry. Returns that carry and how many signals were refused.
   */
  async function handOver(
    handle: SessionHandle,
    sessionId: string,
    ready: (carry: SessionCarry) => boolean,
  ): Promise<{ carry: SessionCarry; refused: number }> {
    for (let refused = 0; refused < 200;) {
      const { input } = await currentInput(sessionId);
      if (input.carry && ready(input.carry)) return { carry: input.carry, refused };
      await handle.signal(followupSignal, REFUSED);
      refused++;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${sessionId}: the session never continued as new`);
  }

  it('a continued run reports the last turn end, usage, compactions and refusals of the whole session', async () => {
    const id = 'view';
    const handle = await h.start(id, { compactAt: 0, keepRecentTurns: 0 });
    let refusedSignals = 0;
    let turn = 0;
    for (let round = 1; round <= 3; round++) {
      for (let i = 0; i < 2; i++) await handle.signal(followupSignal, { content: `chat ${++turn}` });
      if (round === 1) {
        // Refused in the first run; the view must still name them after the hand-overs.
        for (let i = 0; i < 2; i++) await handle.signal(followupSignal, REFUSED);
        refusedSignals += 2;
      }
      await waitForTurnEnd(h.store, id, turn, 30_000);
      if (round < 3) {
        await handle.executeUpdate(compactUpdate, { args: [{}] });
        await waitForLog(h.store, id, (events) => appliedCompactions(events) === round, `compaction ${round}`, 30_000);
      }
    }
    const { carry, refused } = await handOver(handle, id, (c) => c.lastTurn === turn && c.compactions === 2);
    refusedSignals += refused;
    await waitForState(handle, (s) => s.rejectedSignals === refusedSignals);

    const events = await h.store.read(id);
    expect(turnEnds(events)).toEqual(Array.from({ length: turn }, (_, i) => `${i + 1}:completed`));
    const mirror = await checkHistoryMirror(h.client, h.store, id);
    expect(mirror.problem).toBeNull();
    expect(mirror.runs, 'at least two continue-as-new').toBeGreaterThanOrEqual(3);

    const usage = loggedUsage(events);
    expect(usage.inputUncached + usage.output).toBeGreaterThan(0);
    expect(appliedCompactions(events)).toBe(2);
    const state = await handle.query(stateQuery);
    expect(state).toMatchObject({
      status: 'idle',
      turn,
      lastTurnEnd: { turn, reason: 'completed', errorCode: null },
      usage,
      compactions: 2,
      rejectedSignals: refusedSignals,
      lastRejection: REFUSAL.slice(0, 500),
    });
    // The carry holds counters and short strings only, never the transcript.
    expect(carry).toMatchObject({
      lastTurnEnd: state.lastTurnEnd,
      usage,
      compactions: 2,
      lastRejection: REFUSAL.slice(0, 500),
    });
    expect(carry.rejectedSignals).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(carry).length).toBeLessThan(2_000);
    expect(JSON.stringify(carry)).not.toContain('chatted');
    await expectProviderSawTheLog(h, [id]);
  }, 120_000);

  it.each([
    {
      id: 'steps',
      limits: { maxSessionSteps: 4 },
      before: (i: number) => `count steps ${i}`,
      last: 'one more step',
    },
    {
      id: 'tokens',
      limits: { maxSessionTokens: 4_000 },
      before: (i: number) => `spend ${i}`,
      last: 'spend the rest',
    },
  ])(
    'a session budget ($id) spans runs: the turn that exceeds it in a fresh run ends with budget',
    async (c) => {
      const handle = await h.start(c.id, c.limits);
      const firstRunId = (await handle.describe()).runId;
      for (let i = 1; i <= 3; i++) await handle.signal(followupSignal, { content: c.before(i) });
      await waitForTurnEnd(h.store, c.id, 3, 30_000);
      const { carry } = await handOver(handle, c.id, (carried) => carried.lastTurn === 3);
      expect(carry.sessionSteps).toBe(3);
      if (c.id === 'tokens') expect(carry.sessionTokens).toBe(3_000);
      const { runId } = await currentInput(c.id);
      expect(runId).not.toBe(firstRunId);

      // Step 1 of turn 4 is within the budget and calls a tool; step 2 would exceed it.
      await handle.signal(followupSignal, { content: c.last });
      const events = await waitForTurnEnd(h.store, c.id, 4, 30_000);
      expect(turnEnds(events)).toEqual(['1:completed', '2:completed', '3:completed', '4:budget']);
      expect(events.filter((e) => e.type === 'step/start' && e.turn === 4)).toHaveLength(1);
      // The log holds turn/end before the workflow has taken closeTurn's result: wait for the state to catch up.
      const state = await waitForState(handle, (s) => s.status === 'idle' && s.lastTurnEnd?.turn === 4);
      expect(state.lastTurnEnd).toEqual({ turn: 4, reason: 'budget', errorCode: null });
      const { inputUncached, cacheRead, output, reasoning } = state.usage;
      if (c.id === 'tokens') expect(inputUncached + cacheRead + output + reasoning).toBe(4_000);
      await expectProviderSawTheLog(h, [c.id]);
    },
    120_000,
  );
});
