// Provider faults on the real stack (Temporal, SQLite, the scripted provider over HTTP): every fault the
// scripted provider can play ends either as a retried success or as a clean `turn/end` error with its
// code — never a half-logged answer, never a stuck workflow, and every body sent is explained by the log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import type { EventOf, SessionEvent } from '../../src/core/index.js';
import type { RecordedRequest } from '../../src/scripted-provider/start-scripted-provider.js';
import { followupSignal, sessionWorkflowId } from '../../src/shared/session-messages.js';
import { echoTool } from '../helpers/test-tools.js';
import {
  derivedBodies,
  expectProviderSawTheLog,
  startHarness,
  waitForState,
  waitForTurnEnd,
  type Harness,
} from '../helpers/session-harness.js';

/** Short, so a silent stream is given up quickly (the model activity then retries after 1 s); it also bounds the wait for response headers, which a loopback provider sends at once. */
const IDLE_TIMEOUT_MS = 2_000;

const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T): EventOf<T>[] =>
  events.filter((e): e is EventOf<T> => e.type === type);

interface ModelAttempt {
  /** The attempt that completed (or failed for good): 1 = no retry. */
  readonly attempt: number;
  /** The failure of the attempt before it (Temporal keeps the last one only). */
  readonly lastFailureType: string | null;
  readonly lastFailureMessage: string | null;
}

describe('provider faults: a retried success or a clean turn error, never a half-logged answer', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      idleTimeoutMs: IDLE_TIMEOUT_MS,
      tools: [echoTool],
      script: {
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'rate-limited' }, fault: { kind: 'rate-limit', retryAfterSeconds: 2 } },
          { match: { lastUserContains: 'rate-limited' }, text: 'answer after the rate limit' },
          { match: { lastUserContains: 'server-errors' }, fault: { kind: 'server-error', status: 503 } },
          { match: { lastUserContains: 'server-errors' }, fault: { kind: 'server-error', status: 500 }, repeat: 2 },
          { match: { lastUserContains: 'server-errors' }, text: 'answer after three server errors' },
          {
            match: { lastUserContains: 'disconnect' },
            text: 'this answer is cut off in the middle of the stream and must never be logged',
            chunkSize: 4,
            fault: { kind: 'disconnect', afterChunks: 4 },
          },
          { match: { lastUserContains: 'disconnect' }, text: 'answer after the disconnect' },
          { match: { lastUserContains: 'silent stream' }, fault: { kind: 'hang' } },
          { match: { lastUserContains: 'silent stream' }, text: 'answer after the silent stream' },
          {
            match: { lastUserContains: 'keep-alives only' },
            fault: { kind: 'hang', keepAlive: true, keepAliveIntervalMs: 200 },
          },
          { match: { lastUserContains: 'keep-alives only' }, text: 'answer after the keep-alives' },
          {
            match: { lastUserContains: 'malformed' },
            text: 'half a malformed answer',
            fault: { kind: 'malformed-sse' },
          },
          { match: { lastUserContains: 'malformed' }, text: 'answer after the malformed stream' },
          { match: { lastUserContains: 'empty reply' }, fault: { kind: 'empty' } },
          { match: { lastUserContains: 'empty reply' }, text: 'answer after the empty reply' },
          {
            match: { lastUserContains: 'bad arguments' },
            toolCalls: [{ id: 'bad-args-1', name: 'echo', arguments: '{"text": "unterminated' }],
          },
          { match: { lastUserContains: 'bad arguments' }, text: 'the arguments were invalid; carrying on' },
          { match: { lastUserContains: 'unauthorized' }, fault: { kind: 'status', status: 401 } },
          { match: { lastUserContains: 'bad request' }, fault: { kind: 'status', status: 400 } },
          { match: { lastUserContains: 'next turn' }, text: 'the session carries on', repeat: 2 },
        ],
      },
    });
  });
  afterAll(async () => h?.stop());

  /** Sends a followup and waits for the turn's end and for the workflow to be idle again. */
  async function runTurn(
    sessionId: string,
    content: string,
    turn = 1,
  ): Promise<{ handle: WorkflowHandle; events: SessionEvent[]; ms: number }> {
    const handle = h.sessionIds.has(sessionId)
      ? h.client.workflow.getHandle(sessionWorkflowId(sessionId))
      : await h.start(sessionId);
    const startedAt = Date.now();
    await handle.signal(followupSignal, { content });
    await waitForTurnEnd(h.store, sessionId, turn, 40_000);
    const ms = Date.now() - startedAt;
    // Never stuck: the workflow is idle with nothing waiting.
    const state = await waitForState(
      handle,
      (s) => s.status === 'idle' && s.queues.nextTurn === 0 && s.queues.nextStep === 0 && s.queues.notYetLogged === 0,
    );
    expect(state.turn).toBe(turn);
    return { handle, events: await h.store.read(sessionId), ms };
  }

  /** The provider requests this session's log explains, in arrival order. */
  async function requestsOf(sessionId: string): Promise<RecordedRequest[]> {
    const mine = new Set(await derivedBodies(sessionId, await h.store.read(sessionId), h.profile));
    return h.provider.requests().filter((r) => r.path.endsWith('/chat/completions') && mine.has(r.body));
  }

  /** The checks every scenario ends with. */
  async function expectClean(sessionId: string, events: readonly SessionEvent[]): Promise<void> {
    // No half-logged answer: every logged assistant message is finished or explicitly interrupted.
    for (const answer of ofType(events, 'assistant/message')) {
      expect(answer.finishReason !== null || answer.interrupted === true, `seq ${answer.seq}`).toBe(true);
    }
    // Each step sent once in the log (a retry reuses the recorded request) and answered at most once.
    const sent = ofType(events, 'request/sent').map((e) => `${e.turn}.${e.step}`);
    expect(new Set(sent).size).toBe(sent.length);
    await expectProviderSawTheLog(h, [sessionId]);
    expect((await checkHistoryMirror(h.client, h.store, sessionId)).problem).toBeNull();
  }

  /** The model-step attempts of the session's history, in order. */
  async function modelAttempts(handle: WorkflowHandle): Promise<ModelAttempt[]> {
    const history = await handle.fetchHistory();
    const modelSteps = new Set<string>();
    const attempts: ModelAttempt[] = [];
    for (const event of history.events ?? []) {
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name === 'modelStep') modelSteps.add(String(event.eventId));
      const started = event.activityTaskStartedEventAttributes;
      if (started && modelSteps.has(String(started.scheduledEventId))) {
        attempts.push({
          attempt: started.attempt ?? 1,
          lastFailureType: started.lastFailure?.applicationFailureInfo?.type ?? null,
          lastFailureMessage: started.lastFailure?.message ?? null,
        });
      }
    }
    return attempts;
  }

  /** Asserts a retried success: `count` identical requests, one finished answer, the turn completed. */
  async function expectRetriedSuccess(
    sessionId: string,
    events: readonly SessionEvent[],
    handle: WorkflowHandle,
    expected: { requests: number; text: string; failureType: string },
  ): Promise<{ gaps: number[]; attempt: ModelAttempt }> {
    const requests = await requestsOf(sessionId);
    expect(requests).toHaveLength(expected.requests);
    expect(new Set(requests.map((r) => r.body)).size).toBe(1); // retried bodies are identical
    const answers = ofType(events, 'assistant/message');
    expect(answers.map((a) => [a.content, a.finishReason, a.interrupted ?? false])).toEqual([
      [expected.text, 'stop', false],
    ]);
    expect(ofType(events, 'turn/end').map((e) => [e.turn, e.reason, e.error ?? null])).toEqual([
      [1, 'completed', null],
    ]);
    const [attempt, ...more] = await modelAttempts(handle);
    expect(more).toEqual([]);
    expect(attempt).toMatchObject({ attempt: expected.requests, lastFailureType: expected.failureType });
    await expectClean(sessionId, events);
    const gaps = requests.slice(1).map((r, i) => r.receivedAt - (requests[i]?.receivedAt ?? 0));
    return { gaps, attempt: attempt as ModelAttempt };
  }

  /** Asserts a clean error: one request (not retried), no answer, `turn/end` error with `code`. */
  async function expectTurnError(
    sessionId: string,
    events: readonly SessionEvent[],
    handle: WorkflowHandle,
    code: string,
  ): Promise<void> {
    expect(await requestsOf(sessionId)).toHaveLength(1);
    expect(ofType(events, 'assistant/message')).toEqual([]);
    const [end, ...more] = ofType(events, 'turn/end');
    expect(more).toEqual([]);
    expect(end).toMatchObject({ turn: 1, reason: 'error', error: { code } });
    // The step that failed is closed before the turn, nothing is left open.
    expect(ofType(events, 'step/start').length).toBe(ofType(events, 'step/end').length);
    const state = await waitForState(handle, (s) => s.status === 'idle');
    expect(state.lastTurnEnd).toEqual({ turn: 1, reason: 'error', errorCode: code });
    expect((await modelAttempts(handle)).map((a) => a.attempt)).toEqual([1]);
    await expectClean(sessionId, events);
  }

  it('429 with retry-after: the retry waits at least the requested delay, then succeeds', async () => {
    const { handle, events, ms } = await runTurn('fault-429', 'rate-limited: say something');
    const { gaps, attempt } = await expectRetriedSuccess('fault-429', events, handle, {
      requests: 2,
      text: 'answer after the rate limit',
      failureType: 'RATE_LIMITED',
    });
    // retry-after-ms: 2000 overrides the policy's 1 s first interval (nextRetryDelay).
    expect(gaps[0]).toBeGreaterThanOrEqual(2_000);
    console.log(`429 retry-after 2 s: gap ${gaps[0]} ms, turn ${ms} ms (${attempt.lastFailureMessage})`);
  });

  it('a burst of 5xx: retried with the policy backoff (1 s, 2 s), then succeeds', async () => {
    const { handle, events, ms } = await runTurn('fault-5xx', 'server-errors: say something');
    const { gaps } = await expectRetriedSuccess('fault-5xx', events, handle, {
      requests: 4,
      text: 'answer after three server errors',
      failureType: 'SERVER_ERROR',
    });
    const [g1 = 0, g2 = 0, g3 = 0] = gaps;
    expect(g1).toBeGreaterThanOrEqual(950);
    expect(g2).toBeGreaterThanOrEqual(1_950);
    expect(g3).toBeGreaterThanOrEqual(3_900);
    console.log(`503, 500, 500 then success: gaps ${gaps.join(', ')} ms, turn ${ms} ms`);
  });

  it('a disconnect mid-stream: the partial answer is discarded, the retry succeeds', async () => {
    const { handle, events, ms } = await runTurn('fault-disconnect', 'disconnect: say something');
    const { gaps } = await expectRetriedSuccess('fault-disconnect', events, handle, {
      requests: 2,
      text: 'answer after the disconnect',
      failureType: 'STREAM_CUT',
    });
    expect(JSON.stringify(events)).not.toContain('cut off in the middle');
    console.log(`disconnect after 4 chunks: gap ${gaps[0]} ms, turn ${ms} ms`);
  });

  it('a stream that goes silent: the idle watchdog fires, the retry succeeds', async () => {
    const { handle, events, ms } = await runTurn('fault-silent', 'silent stream: say something');
    const { gaps, attempt } = await expectRetriedSuccess('fault-silent', events, handle, {
      requests: 2,
      text: 'answer after the silent stream',
      failureType: 'IDLE_STREAM',
    });
    expect(gaps[0]).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS + 950);
    expect(attempt.lastFailureMessage).toContain('0 keep-alive comment line(s)');
    console.log(`silent stream: gap ${gaps[0]} ms, turn ${ms} ms (${attempt.lastFailureMessage})`);
  });

  it('a stream of keep-alive comments only: they are not progress, the watchdog fires, the retry succeeds', async () => {
    const { handle, events, ms } = await runTurn('fault-keepalive', 'keep-alives only: say something');
    const { gaps, attempt } = await expectRetriedSuccess('fault-keepalive', events, handle, {
      requests: 2,
      text: 'answer after the keep-alives',
      failureType: 'IDLE_STREAM',
    });
    expect(gaps[0]).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS + 950);
    const comments = Number(/(\d+) keep-alive comment line/.exec(attempt.lastFailureMessage ?? '')?.[1] ?? 0);
    expect(comments).toBeGreaterThanOrEqual(3);
    console.log(`keep-alives only: gap ${gaps[0]} ms, turn ${ms} ms (${attempt.lastFailureMessage})`);
  });

  it('malformed SSE: classified MALFORMED_RESPONSE, the partial is discarded, the retry succeeds', async () => {
    const { handle, events, ms } = await runTurn('fault-malformed', 'malformed: say something');
    const { gaps } = await expectRetriedSuccess('fault-malformed', events, handle, {
      requests: 2,
      text: 'answer after the malformed stream',
      failureType: 'MALFORMED_RESPONSE',
    });
    console.log(`malformed SSE: gap ${gaps[0]} ms, turn ${ms} ms`);
  });

  it('an empty response (no choices): retried, then succeeds', async () => {
    const { handle, events, ms } = await runTurn('fault-empty', 'empty reply: say something');
    const { gaps } = await expectRetriedSuccess('fault-empty', events, handle, {
      requests: 2,
      text: 'answer after the empty reply',
      failureType: 'MALFORMED_RESPONSE',
    });
    console.log(`empty response: gap ${gaps[0]} ms, turn ${ms} ms`);
  });

  it('a tool call with invalid JSON arguments: the model sees an error result and the turn goes on', async () => {
    const { handle, events, ms } = await runTurn('fault-bad-args', 'bad arguments: call echo');
    const results = ofType(events, 'tool/result');
    expect(results.map((r) => [r.callId, r.status])).toEqual([['bad-args-1', 'error']]);
    expect(results[0]?.output).toMatch(/not valid JSON/);
    const requests = await requestsOf('fault-bad-args');
    expect(requests).toHaveLength(2);
    // The second request carries the error result to the model.
    const second = JSON.parse(requests[1]?.body ?? '{}') as { messages: Array<{ role: string; content: unknown }> };
    expect(second.messages.at(-1)).toMatchObject({ role: 'tool', content: results[0]?.output });
    expect(ofType(events, 'assistant/message').map((a) => a.content)).toEqual([
      null,
      'the arguments were invalid; carrying on',
    ]);
    expect(ofType(events, 'turn/end').map((e) => e.reason)).toEqual(['completed']);
    expect((await modelAttempts(handle)).map((a) => a.attempt)).toEqual([1, 1]);
    await expectClean('fault-bad-args', events);
    console.log(`invalid tool arguments: turn ${ms} ms`);
  });

  it('401: not retried, the turn ends error AUTH, and the next turn runs', async () => {
    const { handle, events, ms } = await runTurn('fault-401', 'unauthorized: say something');
    await expectTurnError('fault-401', events, handle, 'AUTH');
    const next = await runTurn('fault-401', 'next turn, please', 2);
    expect(ofType(next.events, 'turn/end').map((e) => `${e.turn}:${e.reason}`)).toEqual(['1:error', '2:completed']);
    await expectClean('fault-401', next.events);
    console.log(`401: turn ${ms} ms`);
  });

  it('400: not retried, the turn ends error BAD_REQUEST, and the next turn runs', async () => {
    const { handle, events, ms } = await runTurn('fault-400', 'bad request: say something');
    await expectTurnError('fault-400', events, handle, 'BAD_REQUEST');
    const next = await runTurn('fault-400', 'next turn, please', 2);
    expect(ofType(next.events, 'turn/end').map((e) => `${e.turn}:${e.reason}`)).toEqual(['1:error', '2:completed']);
    await expectClean('fault-400', next.events);
    console.log(`400: turn ${ms} ms`);
  });
});
