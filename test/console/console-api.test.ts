// The web console's HTTP API on the real stack (Temporal dev server, SQLite store, scripted provider):
// list, detail, events, timeline, a step's verified request and its diff (kept prefix; a header change),
// the live SSE stream, every action, and errors answered as the API defines them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  AgentList,
  SessionDetail,
  SessionEvents,
  SessionList,
  StepRequest,
  Timeline,
  ApiError,
} from '../../src/console/console-api.js';
import type { ConsoleServer } from '../../src/console/console-server.js';
import { SqliteAgentCatalog } from '../../src/agents/sqlite-agent-catalog.js';
import { approvalShortId, type SessionEvent } from '../../src/core/index.js';
import { approvalPolicyPlugin } from '../../src/plugins/basic-plugins.js';
import type { Plugin } from '../../src/plugins/plugin.js';
import { followupSignal } from '../../src/shared/session-messages.js';
import { liveStreamPlugin } from '../../src/streaming/live-stream-plugin.js';
import { MemoryDeltaChannel } from '../../src/streaming/memory-delta-channel.js';
import { echoTool, failTool } from '../helpers/test-tools.js';
import { startHarness, TEST_MODEL, TEST_MODEL_2, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { call, post, readSse, startTestConsole } from './console-client.js';

const echo = (id: string) => ({ toolCalls: [{ id, name: 'echo', arguments: JSON.stringify({ text: 'hi' }) }] });
const STREAMED = 'streamed words arriving one small chunk at a time for the console';

/** A started workflow opens its log in its first activity: the console knows a session by its log. */
async function untilLogExists(h: Harness, sessionId: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (
      await h.store.head(sessionId).then(
        () => true,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no log for ${sessionId}`);
}

describe('web console API on the real stack', () => {
  let h: Harness;
  let server: ConsoleServer;
  const channel = new MemoryDeltaChannel();
  const switchModel: Plugin = {
    name: 'model-switch',
    request: (config, context) =>
      context.sessionId === 'console-switch' && context.turn >= 2 ? { ...config, model: TEST_MODEL_2 } : config,
  };
  const api = (path: string) => call(server.url, path);
  const catalog = SqliteAgentCatalog.open(':memory:');

  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'first task' }, ...echo('c1') },
          { match: { lastUserContains: 'first task' }, text: 'first done' },
          { match: { lastUserContains: 'turn one' }, text: 'one done' },
          { match: { lastUserContains: 'turn two' }, text: 'two done' },
          { match: { lastUserContains: 'stream me' }, text: STREAMED, chunkSize: 4, chunkDelayMs: 40 },
          {
            match: { lastUserContains: 'need approval' },
            toolCalls: [{ id: 'f1', name: 'fail', arguments: '{}' }],
          },
          { text: 'ok', repeat: 50 },
        ],
      },
      tools: [echoTool, failTool],
      plugins: [liveStreamPlugin(channel), approvalPolicyPlugin({ ask: ['fail'] }), switchModel],
    });
    // Two workers' entries in a catalog of this process's own (the worker publishing is the catalog tests').
    await catalog.publish({ taskQueue: h.taskQueue, hostId: 'host-a', pid: 1, instanceId: 'w1' }, [
      {
        name: 'coder',
        version: '111111111111',
        description: 'writes code',
        model: TEST_MODEL,
        tools: ['echo'],
        isDefault: true,
      },
    ]);
    await catalog.publish({ taskQueue: 'other-queue', hostId: 'host-b', pid: 2, instanceId: 'w2' }, [
      { name: 'coder', version: '222222222222', model: TEST_MODEL_2, tools: [], isDefault: false },
    ]);
    server = await startTestConsole(h, channel, { agents: catalog });
    const first = await h.start('console-first');
    await first.signal(followupSignal, { content: 'first task' });
    await waitForTurnEnd(h.store, 'console-first', 1);
    const sw = await h.start('console-switch');
    await sw.signal(followupSignal, { content: 'turn one' });
    await waitForTurnEnd(h.store, 'console-switch', 1);
    await sw.signal(followupSignal, { content: 'turn two' });
    await waitForTurnEnd(h.store, 'console-switch', 2);
  }, 90_000);
  afterAll(async () => {
    await server?.close();
    await catalog.close();
    await h?.stop();
  });

  it('lists sessions with their Temporal status and what their logs add up to; filters by status', async () => {
    const answer = await api('/api/sessions');
    expect(answer.status).toBe(200);
    const list = answer.body as SessionList;
    const first = list.sessions.find((s) => s.sessionId === 'console-first');
    expect(first).toMatchObject({ status: 'idle', turns: 1, parentSessionId: null, depth: 0 });
    expect(first?.tokens).toBeGreaterThan(0);
    expect(first?.lastActivity).toBeGreaterThan(0);
    const idle = (await api('/api/sessions?status=idle')).body as SessionList;
    expect(idle.sessions.map((s) => s.sessionId).sort()).toEqual(
      expect.arrayContaining(['console-first', 'console-switch']),
    );
    const none = (await api('/api/sessions?status=closed')).body as SessionList;
    expect(none.sessions.map((s) => s.sessionId)).not.toContain('console-first');
  });

  it('lists the agents live workers serve, every queue or one', async () => {
    const all = await api('/api/agents');
    expect(all.status).toBe(200);
    const list = all.body as AgentList;
    expect(list.ttlMs).toBe(catalog.ttlMs);
    // By task queue, then name.
    expect(list.agents.map((a) => `${a.taskQueue}@${a.version}`)).toEqual(
      [`${h.taskQueue}@111111111111`, 'other-queue@222222222222'].sort(),
    );
    const mine = (await api(`/api/agents?taskQueue=${encodeURIComponent(h.taskQueue)}`)).body as AgentList;
    expect(mine.agents).toEqual([
      {
        taskQueue: h.taskQueue,
        name: 'coder',
        version: '111111111111',
        description: 'writes code',
        model: TEST_MODEL,
        tools: ['echo'],
        default: true,
        workers: 1,
        lastSeenAt: expect.any(Number) as number,
      },
    ]);
    const bad = await api('/api/agents?taskQueue=');
    expect([bad.status, (bad.body as ApiError).error.code]).toEqual([400, 'INVALID_PAYLOAD']);
  });

  it("answers a session's detail with the workflow's state", async () => {
    const answer = await api('/api/sessions/console-first');
    expect(answer.status).toBe(200);
    const detail = answer.body as SessionDetail;
    const events = await h.store.read('console-first');
    expect(detail).toMatchObject({ sessionId: 'console-first', head: events.length, turns: 1, stateUnavailable: null });
    expect(detail.state).toMatchObject({ sessionId: 'console-first', status: 'idle', turn: 1 });
    expect(detail.usage.output).toBeGreaterThan(0);
  });

  it('answers the log from a seq', async () => {
    const all = (await api('/api/sessions/console-first/events')).body as SessionEvents;
    const stored = await h.store.read('console-first');
    expect(all.head).toBe(stored.length);
    expect(all.events).toEqual(JSON.parse(JSON.stringify(stored)));
    const tail = (await api('/api/sessions/console-first/events?from=3')).body as SessionEvents;
    expect(tail.events[0]?.seq).toBe(3);
    expect(tail.events).toHaveLength(stored.length - 3);
  });

  it('draws the timeline: turns, steps with usage, latency, tool calls and header changes', async () => {
    const timeline = (await api('/api/sessions/console-first/timeline')).body as Timeline;
    expect(timeline.turns).toHaveLength(1);
    const [turn] = timeline.turns;
    expect(turn?.ended).toBe('completed');
    expect(turn?.steps.map((s) => `${s.turn}.${s.step}`)).toEqual(['1.1', '1.2']);
    expect(turn?.steps[0]?.toolCalls).toEqual([{ callId: 'c1', name: 'echo', status: 'ok' }]);
    expect(turn?.steps[1]?.finishReason).toBe('stop');
    for (const step of turn?.steps ?? []) {
      expect(step.requestDigest).toMatch(/^sha256:/);
      expect(step.usage?.output).toBeGreaterThan(0);
      expect(step.latencyMs).toBeGreaterThanOrEqual(0);
      expect(step.headerChanged).toBe(false);
    }
    for (const step of turn?.steps ?? []) {
      expect(step).toMatchObject({ state: 'completed', model: TEST_MODEL, error: null });
      expect(step.endedAt).toBeGreaterThanOrEqual(step.startedAt);
      // The waterfall: the wait until the request went out, then the model; a tool bar for the echo call.
      expect(step.phases.slice(0, 2).map((p) => [p.kind, p.endMs !== null && p.endMs >= p.startMs])).toEqual([
        ['wait', true],
        ['model', true],
      ]);
    }
    expect(turn?.steps[0]?.phases.filter((p) => p.kind === 'tool').map((p) => p.label)).toEqual(['echo (c1)']);
    const switched = (await api('/api/sessions/console-switch/timeline')).body as Timeline;
    expect(switched.turns.map((t) => t.steps.map((s) => s.headerChanged))).toEqual([[false], [true]]);
    // Each step names the model its own header named; the costs are summed per model, in order of first use.
    expect(switched.turns.map((t) => t.steps.map((s) => s.model))).toEqual([[TEST_MODEL], [TEST_MODEL_2]]);
    expect(switched.costByModel.map((m) => [m.model, m.steps, m.usage.output > 0])).toEqual([
      [TEST_MODEL, 1, true],
      [TEST_MODEL_2, 1, true],
    ]);
  });

  it("re-derives a step's request, verifies it against the recorded digest and diffs it with the step before", async () => {
    const sent = (await h.store.read('console-first')).filter((e) => e.type === 'request/sent');
    const first = (await api('/api/sessions/console-first/steps/1/1/request')).body as StepRequest;
    expect(first.verified).toBe(true);
    expect(first.digest).toBe(sent[0]?.type === 'request/sent' ? sent[0].digest : null);
    expect(first.diff.previous).toBeNull();
    expect(first.body).toMatchObject({ model: expect.any(String), messages: expect.any(Array) });
    const second = (await api('/api/sessions/console-first/steps/1/2/request')).body as StepRequest;
    expect(second.verified).toBe(true);
    expect(second.recordedDigest).toBe(sent[1]?.type === 'request/sent' ? sent[1].digest : null);
    expect(second.diff).toMatchObject({ previous: { turn: 1, step: 1 }, prefixBrokeAt: null, reason: null });
    const firstMessages = (first.body as { messages: unknown[] }).messages.length;
    expect(second.diff.commonPrefix).toBeGreaterThanOrEqual(firstMessages - 1);
    expect(second.diff.appended).toBeGreaterThan(0);
    expect(second.diff.headerChanged).toBe(false);
  });

  it('names where and why the prefix broke after a header change (a model switch)', async () => {
    const answer = (await api('/api/sessions/console-switch/steps/2/1/request')).body as StepRequest;
    expect(answer.verified).toBe(true);
    expect(answer.diff.headerChanged).toBe(true);
    expect(answer.diff.prefixBrokeAt).toBe(0);
    expect(answer.diff.reason).toContain('header change');
    expect(answer.diff.reason).toContain(TEST_MODEL_2);
  });

  it('streams text of a running step and a status change over SSE', async () => {
    await h.start('console-live');
    await untilLogExists(h, 'console-live');
    const url = new URL('/api/sessions/console-live/live', server.url).toString();
    const { messages, contentType } = await readSse(
      url,
      (got) =>
        got.some((m) => m.event === 'event' && (m.data as { event: SessionEvent }).event.type === 'turn/end') &&
        // The state changes many times while running (step, head, usage): wait for the one after the turn.
        (got.filter((m) => m.event === 'status').at(-1)?.data as { state: { status: string } | null } | undefined)
          ?.state?.status === 'idle',
      {
        onOpen: async () => {
          const sent = await post(server.url, '/api/sessions/console-live/messages', {
            kind: 'followup',
            content: 'stream me',
          });
          expect(sent.status).toBe(202);
        },
      },
    );
    expect(contentType).toContain('text/event-stream');
    const text = messages
      .filter((m) => m.event === 'text')
      .map((m) => (m.data as { text: string }).text)
      .join('');
    expect(text.length).toBeGreaterThan(0);
    expect(STREAMED.startsWith(text)).toBe(true);
    const statuses = messages
      .filter((m) => m.event === 'status')
      .map((m) => (m.data as { state: { status: string } | null }).state?.status);
    expect(statuses).toContain('running');
    expect(statuses.at(-1)).toBe('idle');
  });

  it('sends heartbeat comments on a quiet stream', async () => {
    const url = new URL('/api/sessions/console-first/live?from=1000', server.url).toString();
    let started = 0;
    const { comments } = await readSse(url, () => started > 0 && Date.now() - started > 1_000, {
      timeoutMs: 1_500,
      onOpen: () => {
        started = Date.now();
        return Promise.resolve();
      },
    });
    expect(comments).toBeGreaterThan(0);
  });

  it('sends followup, steer and inject; approves a waiting call; interrupts; compacts; forks', async () => {
    await h.start('console-acts');
    expect(
      await post(server.url, '/api/sessions/console-acts/messages', { kind: 'inject', content: 'ctx' }),
    ).toMatchObject({
      status: 202,
      body: { accepted: true },
    });
    expect(
      (await post(server.url, '/api/sessions/console-acts/messages', { kind: 'steer', content: 'go on' })).status,
    ).toBe(202);
    await waitForTurnEnd(h.store, 'console-acts', 1);
    expect(
      (await post(server.url, '/api/sessions/console-acts/messages', { kind: 'followup', content: 'need approval' }))
        .status,
    ).toBe(202);
    let detail: SessionDetail | null = null;
    for (let i = 0; i < 100 && detail?.state?.pendingApproval?.callId !== 'f1'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      detail = (await api('/api/sessions/console-acts')).body as SessionDetail;
    }
    expect(detail?.state?.pendingApproval?.callId).toBe('f1');
    // Approved by its short id, and remembered for the tool.
    const shortId = approvalShortId('f1');
    expect(detail?.state?.pendingApproval?.shortId).toBe(shortId);
    // The waiting call, its short id, its tool and arguments: in the detail and on a route of its own.
    const requestSeq = (await h.store.read('console-acts')).find(
      (e) => e.type === 'approval/request' && e.callId === 'f1',
    )?.seq;
    const pending = { callId: 'f1', shortId, tool: 'fail', argumentsPreview: '{}', turn: 2, step: 1, requestSeq };
    expect(detail?.pendingApproval).toEqual({ ...pending, reason: expect.any(String) });
    expect((await api('/api/sessions/console-acts/approvals')).body).toEqual({
      sessionId: 'console-acts',
      pending: { ...pending, reason: detail?.pendingApproval?.reason },
    });
    expect(
      (
        await post(server.url, `/api/sessions/console-acts/approvals/${shortId}`, {
          decision: 'approve',
          remember: 'tool',
        })
      ).status,
    ).toBe(202);
    const events = await waitForTurnEnd(h.store, 'console-acts', 2);
    expect(events.find((e) => e.type === 'approval/decision')).toMatchObject({ callId: 'f1', decision: 'approve' });
    expect((await api('/api/sessions/console-acts/approvals')).body).toEqual({
      sessionId: 'console-acts',
      pending: null,
    });
    expect(((await api('/api/sessions/console-acts')).body as SessionDetail).pendingApproval).toBeNull();
    expect(events.find((e) => e.type === 'policy/rule')).toMatchObject({
      callId: 'f1',
      rule: { tool: 'fail', outcome: 'allow' },
    });
    const user = events
      .filter((e) => e.type === 'user/message')
      .map((e) => (e.type === 'user/message' ? e.origin : ''));
    expect(user).toEqual(expect.arrayContaining(['inject', 'steer']));

    expect((await post(server.url, '/api/sessions/console-acts/interrupt', {})).status).toBe(202);
    expect((await post(server.url, '/api/sessions/console-acts/compact', { prune: true })).status).toBe(202);

    const head = (await h.store.read('console-first')).length;
    const forked = await post(server.url, '/api/sessions/console-first/fork', {
      atSeq: head,
      as: 'console-first-copy',
    });
    expect(forked).toMatchObject({ status: 201, body: { sessionId: 'console-first-copy' } });
    const copy = (await api('/api/sessions/console-first-copy/events')).body as SessionEvents;
    expect(copy.events.length).toBeGreaterThanOrEqual(head);
    expect((await api('/api/sessions/console-first-copy')).body).toMatchObject({ parentSessionId: 'console-first' });
  }, 60_000);

  it('answers errors as ApiError with the code and its status', async () => {
    const expectError = (answer: { status: number; body: unknown }, status: number, code: string) => {
      expect(answer.status).toBe(status);
      expect((answer.body as ApiError).error.code).toBe(code);
      expect((answer.body as ApiError).error.message.length).toBeGreaterThan(0);
    };
    expectError(await api('/api/sessions/nope'), 404, 'SESSION_NOT_FOUND');
    expectError(await api('/api/sessions/nope/timeline'), 404, 'SESSION_NOT_FOUND');
    expectError(await api('/api/sessions/nope/live'), 404, 'SESSION_NOT_FOUND');
    expectError(
      await post(server.url, '/api/sessions/nope/messages', { kind: 'followup', content: 'x' }),
      404,
      'SESSION_NOT_FOUND',
    );
    const bad = await post(server.url, '/api/sessions/console-first/messages', { kind: 'shout', content: 'x' });
    expectError(bad, 400, 'INVALID_PAYLOAD');
    expect((bad.body as ApiError).error.message).toContain('kind');
    const extra = await post(server.url, '/api/sessions/console-first/fork', { atSeq: -1 });
    expectError(extra, 400, 'INVALID_PAYLOAD');
    expect((extra.body as ApiError).error.message).toContain('atSeq');
    expectError(
      await post(server.url, '/api/sessions/console-first/approvals/zz', { decision: 'approve' }),
      409,
      'NO_PENDING_APPROVAL',
    );
    const forever = await post(server.url, '/api/sessions/console-first/approvals/zz', {
      decision: 'approve',
      remember: 'forever',
    });
    expectError(forever, 400, 'INVALID_PAYLOAD');
    expect((forever.body as ApiError).error.message).toContain('remember');
    expectError(await api('/api/sessions/console-first/steps/9/9/request'), 404, 'STEP_NOT_FOUND');
    expectError(await api('/api/sessions/console-first/events?from=x'), 400, 'INVALID_PAYLOAD');
    expectError(await api('/api/nothing-here'), 404, 'NOT_FOUND');
  });
});
