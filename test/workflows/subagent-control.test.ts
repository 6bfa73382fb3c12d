// Subagents under control on a real Temporal server: limits a call gives its child, a tree two levels
// deep, a child's approval decided from outside, and a parent or a child that goes away (terminated).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveUpdate, followupSignal, sessionWorkflowId, stateQuery } from '../../src/shared/session-messages.js';
import { usageTotal, type SessionEvent } from '../../src/core/index.js';
import { approvalPolicyPlugin } from '../../src/plugins/basic-plugins.js';
import { createDelegateTool } from '../../src/tools/delegate.js';
import { echoTool } from '../helpers/test-tools.js';
import { ofType, turnEnds } from '../helpers/log-views.js';
import { expectProviderSawTheLog, startHarness, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { waitForLog, waitForState } from '../helpers/scenario-runtime.js';

const results = (events: readonly SessionEvent[]) => ofType(events, 'tool/result');
const ownTokens = (events: readonly SessionEvent[]) =>
  events.reduce((sum, e) => sum + (e.type === 'assistant/message' && e.usage ? usageTotal(e.usage) : 0), 0);

describe('subagents two levels deep, with limits and approvals', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'go two deep' },
            toolCalls: [{ id: 'p1', name: 'delegate', arguments: { task: 'middle job: delegate further' } }],
          },
          {
            match: { lastUserContains: 'middle job' },
            toolCalls: [{ id: 'm1', name: 'delegate', arguments: { task: 'leaf job: echo leaf' } }],
          },
          {
            match: { lastUserContains: 'leaf job' },
            toolCalls: [{ id: 'l1', name: 'echo', arguments: { text: 'leaf' } }],
          },
          { match: { lastUserContains: 'leaf job' }, text: 'leaf done' },
          { match: { lastUserContains: 'middle job' }, text: 'middle done' },
          { match: { lastUserContains: 'go two deep' }, text: 'tree done' },

          {
            match: { lastUserContains: 'short leash' },
            toolCalls: [{ id: 'q1', name: 'delegate', arguments: { task: 'looping job', max_steps: 2 } }],
          },
          {
            match: { lastUserContains: 'looping job' },
            toolCalls: [{ id: 'k1', name: 'echo', arguments: { text: 'again' } }],
            repeat: 5,
          },
          { match: { lastUserContains: 'short leash' }, text: 'the child ran out of steps' },

          {
            match: { lastUserContains: 'needs a yes' },
            toolCalls: [{ id: 'r1', name: 'delegate', arguments: { task: 'guarded job: shout' } }],
          },
          {
            match: { lastUserContains: 'guarded job' },
            toolCalls: [{ id: 'g1', name: 'shout', arguments: { text: 'hey' } }],
          },
          { match: { lastUserContains: 'guarded job' }, text: 'shouted' },
          { match: { lastUserContains: 'needs a yes' }, text: 'the child shouted' },
        ],
      },
      // Delegation two levels deep; `shout` asks for approval.
      tools: [
        echoTool,
        { ...echoTool, schema: { ...echoTool.schema, name: 'shout' } },
        createDelegateTool({ maxDepth: 2 }),
      ],
      plugins: [approvalPolicyPlugin({ ask: ['shout'] })],
    });
  });
  afterAll(async () => h?.stop());

  it('a child delegates to a grandchild; spend rolls up the tree, and the grandchild is offered no delegate', async () => {
    const parent = 'deep-parent';
    const middle = `${parent}.d1-1-0`;
    const leaf = `${middle}.d1-1-0`;
    const handle = await h.start(parent);
    await handle.signal(followupSignal, { content: 'go two deep' });
    const events = await waitForTurnEnd(h.store, parent, 1, 60_000);
    expect(turnEnds(events)).toEqual(['1:completed']);
    const [middleLog, leafLog] = await Promise.all([h.store.read(middle), h.store.read(leaf)]);
    expect(middleLog[0]).toMatchObject({
      delegation: { parentSessionId: parent, depth: 1, workspaceSessionId: parent },
    });
    expect(leafLog[0]).toMatchObject({ delegation: { parentSessionId: middle, depth: 2, workspaceSessionId: parent } });
    const offered = (log: readonly SessionEvent[]) =>
      log.flatMap((e) => (e.type === 'request/header' ? (e.header.tools ?? []).map((t) => t.name) : []));
    expect(offered(middleLog)).toContain('delegate');
    expect(offered(leafLog)).not.toContain('delegate');

    const [middleResult] = results(events);
    const [leafResult] = results(middleLog).filter((r) => r.name === 'delegate');
    expect(leafResult?.child?.reason).toBe('completed');
    expect(middleResult?.child?.reason).toBe('completed');
    // The middle child's spend is its own steps plus the leaf's; the parent counts both in its usage.
    expect(usageTotal(middleResult!.child!.usage)).toBe(ownTokens(middleLog) + usageTotal(leafResult!.child!.usage));
    expect(usageTotal(leafResult!.child!.usage)).toBe(ownTokens(leafLog));
    const state = await handle.query(stateQuery);
    expect(usageTotal(state.usage)).toBe(ownTokens(events) + usageTotal(middleResult!.child!.usage));
    for (const id of [middle, leaf]) h.sessionIds.add(id);
    await expectProviderSawTheLog(h, [parent, middle, leaf]);
  });

  it("a call's max_steps bounds its child: the child's turn ends max-steps and the parent reads that", async () => {
    const parent = 'leash-parent';
    const child = `${parent}.d1-1-0`;
    const handle = await h.start(parent);
    await handle.signal(followupSignal, { content: 'short leash' });
    const events = await waitForTurnEnd(h.store, parent, 1, 60_000);
    expect(turnEnds(events)).toEqual(['1:completed']);
    const childLog = await h.store.read(child);
    expect(turnEnds(childLog)).toEqual(['1:max-steps']);
    expect(childLog.filter((e) => e.type === 'assistant/message')).toHaveLength(2);
    const [answer] = results(events);
    expect(answer).toMatchObject({ status: 'error', child: { reason: 'max-steps' } });
    expect(answer?.output).toContain('its turn ended "max-steps"');
    h.sessionIds.add(child);
    await expectProviderSawTheLog(h, [parent, child]);
  });

  it("a child's call that asks for approval waits until someone approves it on the child", async () => {
    const parent = 'approve-parent';
    const child = `${parent}.d1-1-0`;
    const handle = await h.start(parent);
    await handle.signal(followupSignal, { content: 'needs a yes' });
    // The parent lists its running child; the child shows the call waiting.
    await waitForState(handle, (s) => s.children?.some((c) => c.sessionId === child) ?? false, 30_000);
    const childHandle = h.client.workflow.getHandle(sessionWorkflowId(child));
    const waiting = await waitForState(childHandle, (s) => s.pendingApproval !== null, 30_000);
    expect(waiting.pendingApproval).toMatchObject({ callId: 'g1', name: 'shout' });
    await childHandle.executeUpdate(approveUpdate, { args: [{ callId: 'g1', decision: 'approve', by: 'test' }] });
    const events = await waitForTurnEnd(h.store, parent, 1, 60_000);
    expect(turnEnds(events)).toEqual(['1:completed']);
    expect(results(events)[0]?.output).toContain('shouted');
    const childLog = await h.store.read(child);
    expect(childLog.find((e) => e.type === 'approval/decision')).toMatchObject({ decision: 'approve', by: 'test' });
    expect((await handle.query(stateQuery)).children).toBeUndefined();
    h.sessionIds.add(child);
    await expectProviderSawTheLog(h, [parent, child]);
  });
});

describe('subagents whose parent or child goes away', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'delegate a long job' },
            toolCalls: [{ id: 'j1', name: 'delegate', arguments: { task: 'long job: stream' } }],
          },
          { match: { lastUserContains: 'delegate a long job' }, text: 'carried on without it' },
          {
            match: { lastUserContains: 'delegate another long job' },
            toolCalls: [{ id: 'j2', name: 'delegate', arguments: { task: 'long job: stream' } }],
          },
          {
            match: { lastUserContains: 'long job' },
            text: 'word '.repeat(4000),
            chunkSize: 5,
            chunkDelayMs: 50,
            repeat: 2,
          },
        ],
      },
      tools: [echoTool, createDelegateTool({ maxDepth: 1 })],
    });
  });
  afterAll(async () => h?.stop());

  const streaming = (child: string) =>
    waitForLog(h.store, child, (log) => log.some((e) => e.type === 'request/sent'), 'the child streaming', 30_000);

  it("a terminated child is an error result the parent reads; the parent's turn carries on", async () => {
    const parent = 'gone-child';
    const child = `${parent}.d1-1-0`;
    const handle = await h.start(parent);
    await handle.signal(followupSignal, { content: 'delegate a long job' });
    await streaming(child);
    await h.client.workflow.getHandle(sessionWorkflowId(child)).terminate('operator stopped it');
    const events = await waitForTurnEnd(h.store, parent, 1, 60_000);
    expect(turnEnds(events)).toEqual(['1:completed']);
    const [answer] = results(events);
    expect(answer).toMatchObject({ status: 'error', child: { sessionId: child, reason: 'unfinished' } });
    expect(answer?.output).toContain('ended without finishing its task');
    expect(answer?.output).toContain('terminated');
    h.sessionIds.add(child);
    await expectProviderSawTheLog(h, [parent]);
  }, 90_000);

  it('a terminated parent cancels its running child (REQUEST_CANCEL), which ends its turn aborted', async () => {
    const parent = 'gone-parent';
    const child = `${parent}.d1-1-0`;
    const handle = await h.start(parent);
    await handle.signal(followupSignal, { content: 'delegate another long job' });
    await streaming(child);
    await handle.terminate('operator stopped the parent');
    const childLog = await waitForTurnEnd(h.store, child, 1, 30_000);
    expect(turnEnds(childLog)).toEqual(['1:aborted']);
    // The turn's end is logged by the activity before the workflow task that ends the run completes.
    const childHandle = h.client.workflow.getHandle(sessionWorkflowId(child));
    await expect(childHandle.result()).rejects.toThrow(/cancel/i);
    expect((await childHandle.describe()).status.name).toBe('CANCELLED');
    expect(childLog.filter((e) => e.type === 'tool/start' || e.type === 'tool/result')).toEqual([]);
  }, 90_000);
});
