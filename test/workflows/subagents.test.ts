// Subagents on a real Temporal server: a parent delegates to children (child workflows with their own
// logs), waits for them durably, gets their answers as tool results in the model's order, and passes an
// interrupt on to them. Every scenario ends with the provider/log check over the whole tree.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  followupSignal,
  interruptSignal,
  sessionWorkflowId,
  stateQuery,
  steerSignal,
} from '../../src/shared/session-messages.js';
import { SESSION_PARENT_ATTRIBUTE } from '../../src/shared/search-attributes.js';
import type { SessionEvent } from '../../src/core/index.js';
import { createDelegateTool } from '../../src/tools/delegate.js';
import { echoTool } from '../helpers/test-tools.js';
import { ofType, turnEnds } from '../helpers/log-views.js';
import { expectProviderSawTheLog, startHarness, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { waitForLog } from '../helpers/scenario-runtime.js';

const results = (events: readonly SessionEvent[]) => ofType(events, 'tool/result');
const starts = (events: readonly SessionEvent[]) => ofType(events, 'tool/start');

describe('subagents: delegation to child sessions on a real Temporal server', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'split the work' },
            toolCalls: [
              { id: 'd1', name: 'delegate', arguments: { task: 'alpha job: echo alpha', tools: ['echo'] } },
              { id: 'd2', name: 'delegate', arguments: { task: 'beta job: echo beta' } },
            ],
          },
          // Each child calls a tool, then answers; slow enough that running one after the other would show.
          {
            match: { lastUserContains: 'alpha job' },
            toolCalls: [{ id: 'a1', name: 'echo', arguments: { text: 'alpha' } }],
            delayMs: 1500,
          },
          { match: { lastUserContains: 'alpha job' }, text: 'alpha done', delayMs: 500 },
          {
            match: { lastUserContains: 'beta job' },
            toolCalls: [{ id: 'b1', name: 'echo', arguments: { text: 'beta' } }],
            delayMs: 1500,
          },
          { match: { lastUserContains: 'beta job' }, text: 'beta done', delayMs: 500 },
          { match: { lastUserContains: 'split the work' }, text: 'both children answered' },

          {
            match: { lastUserContains: 'bad delegation' },
            toolCalls: [
              { id: 'x1', name: 'delegate', arguments: { task: '   ' } },
              { id: 'x2', name: 'delegate', arguments: { task: 'anything', tools: ['no_such_tool'] } },
            ],
          },
          { match: { lastUserContains: 'bad delegation' }, text: 'understood' },

          {
            match: { lastUserContains: 'long delegation' },
            toolCalls: [{ id: 'l1', name: 'delegate', arguments: { task: 'slow job: stream slowly' } }],
          },
          // Minutes long: only the interrupt ends it.
          { match: { lastUserContains: 'slow job' }, text: 'word '.repeat(4000), chunkSize: 5, chunkDelayMs: 50 },

          {
            match: { lastUserContains: 'steerable delegation' },
            toolCalls: [{ id: 's1', name: 'delegate', arguments: { task: 'steerable job' } }],
          },
          {
            match: { lastUserContains: 'steerable job' },
            toolCalls: [{ id: 'e1', name: 'echo', arguments: { text: 'waiting' } }],
            delayMs: 3000,
          },
          { match: { lastUserContains: 'also say gamma' }, text: 'gamma said' },
          { match: { lastUserContains: 'steerable delegation' }, text: 'the child was steered' },
        ],
      },
      tools: [echoTool, createDelegateTool({ maxDepth: 1 })],
    });
  });
  afterAll(async () => h?.stop());

  it('two delegation calls run two children in parallel; their answers come back in model order', async () => {
    const parent = 'sub-parallel';
    const handle = await h.start(parent);
    await handle.signal(followupSignal, { content: 'split the work' });
    const events = await waitForTurnEnd(h.store, parent, 1, 60_000);
    expect(turnEnds(events)).toEqual(['1:completed']);

    const [alpha, beta] = [`${parent}.d1-1-0`, `${parent}.d1-1-1`];
    expect(starts(events).map((s) => [s.callId, s.child])).toEqual([
      ['d1', alpha],
      ['d2', beta],
    ]);
    const answers = results(events);
    expect(answers.map((r) => [r.callId, r.status, r.child?.sessionId, r.child?.reason])).toEqual([
      ['d1', 'ok', alpha, 'completed'],
      ['d2', 'ok', beta, 'completed'],
    ]);
    expect(answers[0]?.output).toMatch(
      /^Subagent sub-parallel\.d1-1-0 finished \(2 model steps, \d+ tokens\)\.\n\nalpha done$/,
    );
    expect(answers[1]?.output).toContain('beta done');

    // Each child: linked back to its call, its task as its first followup, one tool call, one completed turn.
    const children = await Promise.all([alpha, beta].map((id) => h.store.read(id)));
    for (const [i, log] of children.entries()) {
      const start = log[0];
      expect(start?.type === 'session/start' && start.delegation).toMatchObject({
        parentSessionId: parent,
        callId: i === 0 ? 'd1' : 'd2',
        depth: 1,
        workspaceSessionId: parent,
      });
      expect(log.find((e) => e.type === 'inbox/enqueue')).toMatchObject({
        origin: 'followup',
        source: `delegate:${parent}`,
      });
      expect(results(log).map((r) => [r.name, r.status])).toEqual([['echo', 'ok']]);
      expect(turnEnds(log)).toEqual(['1:completed']);
    }
    // The tools subset reached alpha's header; at the depth limit neither child is offered `delegate`.
    const toolsOf = (log: readonly SessionEvent[]) =>
      log.flatMap((e) => (e.type === 'request/header' ? [e.header.tools?.map((t) => t.name) ?? []] : []));
    expect(toolsOf(children[0]!)).toEqual([['echo'], ['echo']].slice(0, toolsOf(children[0]!).length));
    expect(toolsOf(children[1]!)[0]).toEqual(['echo']);
    expect(toolsOf(events)[0]?.sort()).toEqual(['delegate', 'echo']);

    // Parallel: each child's turn started before the other's ended.
    const at = (log: readonly SessionEvent[], type: string) => log.find((e) => e.type === type)?.at ?? 0;
    expect(at(children[0]!, 'turn/start')).toBeLessThan(at(children[1]!, 'turn/end'));
    expect(at(children[1]!, 'turn/start')).toBeLessThan(at(children[0]!, 'turn/end'));

    // The parent's usage counts its children's; both children's workflows completed.
    const childTokens = answers.reduce(
      (sum, r) => sum + (r.child ? r.child.usage.inputUncached + r.child.usage.cacheRead + r.child.usage.output : 0),
      0,
    );
    expect(childTokens).toBeGreaterThan(0);
    const state = await handle.query(stateQuery);
    const own = events.reduce(
      (sum, e) =>
        sum +
        (e.type === 'assistant/message' && e.usage ? e.usage.inputUncached + e.usage.cacheRead + e.usage.output : 0),
      0,
    );
    expect(state.usage.inputUncached + state.usage.cacheRead + state.usage.output).toBe(own + childTokens);
    for (const id of [alpha, beta]) {
      const description = await h.client.workflow.getHandle(sessionWorkflowId(id)).describe();
      expect(description.status.name).toBe('COMPLETED');
      expect(description.typedSearchAttributes.get(SESSION_PARENT_ATTRIBUTE)).toBe(parent);
      h.sessionIds.add(id);
    }
    await expectProviderSawTheLog(h, [parent, alpha, beta]);
  });

  it('a delegation the activity refuses is logged as started and answered with a result the model reads, and starts no child', async () => {
    const parent = 'sub-refused';
    const handle = await h.start(parent);
    await handle.signal(followupSignal, { content: 'bad delegation' });
    const events = await waitForTurnEnd(h.store, parent, 1, 30_000);
    expect(turnEnds(events)).toEqual(['1:completed']);
    const answers = results(events);
    expect(answers.map((r) => [r.callId, r.status, r.child])).toEqual([
      ['x1', 'error', undefined],
      ['x2', 'error', undefined],
    ]);
    expect(answers[0]?.output).toContain('task must say what to do');
    expect(answers[1]?.output).toContain('no tool named "no_such_tool"');
    // Every call the model made has its start, each without a child, right before its refusal.
    expect(starts(events).map((e) => [e.callId, e.name, e.child])).toEqual([
      ['x1', 'delegate', undefined],
      ['x2', 'delegate', undefined],
    ]);
    for (const answer of answers) {
      const start = starts(events).find((e) => e.callId === answer.callId);
      expect(start?.seq).toBe(answer.seq - 1);
    }
    await expect(h.store.read(`${parent}.d1-1-0`)).rejects.toThrow(/not found/i);
  });

  it("interrupting the parent interrupts its running child; the child's turn and the parent's end aborted", async () => {
    const parent = 'sub-interrupt';
    const child = `${parent}.d1-1-0`;
    const handle = await h.start(parent);
    await handle.signal(followupSignal, { content: 'long delegation' });
    await waitForLog(h.store, child, (log) => log.some((e) => e.type === 'step/start'), 'the child streaming', 30_000);
    await handle.signal(interruptSignal);
    const events = await waitForTurnEnd(h.store, parent, 1, 30_000);
    expect(turnEnds(events)).toEqual(['1:aborted']);
    const [answer] = results(events);
    expect(answer).toMatchObject({
      callId: 'l1',
      status: 'interrupted',
      child: { sessionId: child, reason: 'aborted' },
    });
    expect(answer?.output).toContain('its turn ended "aborted"');
    const childLog = await h.store.read(child);
    expect(turnEnds(childLog)).toEqual(['1:aborted']);
    expect(childLog.find((e) => e.type === 'assistant/message')).toMatchObject({ interrupted: true });
    const description = await h.client.workflow.getHandle(sessionWorkflowId(child)).describe();
    expect(description.status.name).toBe('COMPLETED');
    h.sessionIds.add(child);
    await expectProviderSawTheLog(h, [parent, child]);
  });

  it('a child is steered from outside like any session; the steer enters its next step', async () => {
    const parent = 'sub-steer';
    const child = `${parent}.d1-1-0`;
    const handle = await h.start(parent);
    await handle.signal(followupSignal, { content: 'steerable delegation' });
    await waitForLog(h.store, child, (log) => log.some((e) => e.type === 'step/start'), 'the child stepping', 30_000);
    await h.client.workflow.getHandle(sessionWorkflowId(child)).signal(steerSignal, { content: 'also say gamma' });
    const events = await waitForTurnEnd(h.store, parent, 1, 60_000);
    expect(turnEnds(events)).toEqual(['1:completed']);
    expect(results(events)[0]?.output).toContain('gamma said');
    const childLog = await h.store.read(child);
    const steer = childLog.find((e) => e.type === 'user/message' && e.origin === 'steer');
    expect(steer).toMatchObject({ turn: 1, step: 2 });
    h.sessionIds.add(child);
    await expectProviderSawTheLog(h, [parent, child]);
  });
});
