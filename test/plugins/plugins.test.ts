// Plugins through the real stack: approvals (approve, deny, timeout, duplicate), a model switch that
// is one header change and one cache drop, outbound observers stopped by the gate, the repeat guard
// speaking to the model, and a throwing stream observer that is contained.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deepFreeze, type SessionEvent } from '../../src/core/index.js';
import { approveUpdate, followupSignal, stateQuery } from '../../src/shared/session-messages.js';
import { approvalPolicyPlugin } from '../../src/plugins/basic-plugins.js';
import { repeatGuardPlugin } from '../../src/plugins/repeat-guard-plugin.js';
import type { Plugin } from '../../src/plugins/plugin.js';
import { echoTool } from '../helpers/test-tools.js';
import {
  expectProviderSawTheLog,
  startHarness,
  TEST_MODEL_2,
  waitForState,
  waitForTurnEnd,
  type Harness,
} from '../helpers/session-harness.js';

const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [`${e.turn}:${e.reason}${e.error ? `:${e.error.code}` : ''}`] : []));
const echo = (id: string, text = 'x') => ({ toolCalls: [{ id, name: 'echo', arguments: JSON.stringify({ text }) }] });

describe('approvals through the real stack', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'approve me' }, ...echo('a1') },
          { match: { lastUserContains: 'approve me' }, text: 'ran it' },
          { match: { lastUserContains: 'deny me' }, ...echo('d1') },
          { match: { lastUserContains: 'deny me' }, text: 'could not' },
          { match: { lastUserContains: 'let it time out' }, ...echo('t1') },
          { match: { lastUserContains: 'let it time out' }, text: 'timed out' },
        ],
      },
      tools: [echoTool],
      plugins: [approvalPolicyPlugin({ ask: ['echo'] })],
    });
  });
  afterAll(async () => h?.stop());

  it('ask → approve via the update: the call runs; a second decision is rejected', async () => {
    const handle = await h.start('approve');
    await handle.signal(followupSignal, { content: 'approve me' });
    const waiting = await waitForState(handle, (s) => s.pendingApproval !== null);
    expect(waiting.pendingApproval).toMatchObject({
      callId: 'a1',
      name: 'echo',
      reason: 'approval-policy: echo needs approval',
    });
    await expect(
      handle.executeUpdate(approveUpdate, { args: [{ callId: 'zz', decision: 'approve' }] }),
    ).rejects.toMatchObject({
      cause: { type: 'NO_PENDING_APPROVAL' },
    });
    expect(
      await handle.executeUpdate(approveUpdate, { args: [{ callId: 'a1', decision: 'approve', by: 'ops' }] }),
    ).toEqual({
      callId: 'a1',
      decision: 'approve',
    });
    await expect(
      handle.executeUpdate(approveUpdate, { args: [{ callId: 'a1', decision: 'deny' }] }),
    ).rejects.toMatchObject({
      cause: { type: 'NO_PENDING_APPROVAL' },
    });
    const events = await waitForTurnEnd(h.store, 'approve', 1);
    expect(events.find((e) => e.type === 'approval/decision')).toMatchObject({
      callId: 'a1',
      decision: 'approve',
      by: 'ops',
    });
    expect(events.find((e) => e.type === 'tool/result')).toMatchObject({ status: 'ok', output: 'echo: "x"' });
    expect(turnEnds(events)).toEqual(['1:completed']);
    await expectProviderSawTheLog(h, ['approve']);
  });

  it('ask → deny: the model sees a denied result and the turn goes on', async () => {
    const handle = await h.start('deny');
    await handle.signal(followupSignal, { content: 'deny me' });
    await waitForState(handle, (s) => s.pendingApproval?.callId === 'd1');
    await handle.executeUpdate(approveUpdate, { args: [{ callId: 'd1', decision: 'deny', reason: 'not today' }] });
    const events = await waitForTurnEnd(h.store, 'deny', 1);
    expect(events.find((e) => e.type === 'tool/result')).toMatchObject({
      status: 'error',
      output: 'The call was denied by the approver.',
    });
    expect(events.some((e) => e.type === 'tool/start')).toBe(false);
    expect(turnEnds(events)).toEqual(['1:completed']);
  });

  it('ask → no decision in time: fails closed', async () => {
    const handle = await h.start('timeout', { approvalTimeoutMs: 1500 });
    await handle.signal(followupSignal, { content: 'let it time out' });
    const events = await waitForTurnEnd(h.store, 'timeout', 1);
    expect(events.find((e) => e.type === 'approval/decision')).toMatchObject({ callId: 't1', decision: 'timeout' });
    expect(events.find((e) => e.type === 'tool/result')).toMatchObject({
      status: 'error',
      output: 'No approval arrived in time; the call was not run.',
    });
    expect((await handle.query(stateQuery)).pendingApproval).toBeNull();
    await expectProviderSawTheLog(h, ['timeout']);
  });
});

describe('request plugins and observers', () => {
  let h: Harness;
  let observerCalls = 0;
  const modelCalls: string[] = [];
  /** Session prefixes composed, by session: one per loop instance. */
  const prefixesOf = new Map<string, number>();
  const longPrefix: Plugin = {
    name: 'house-rules',
    sessionPrefix: (context) => {
      prefixesOf.set(context.sessionId, (prefixesOf.get(context.sessionId) ?? 0) + 1);
      return {
        system: Array.from({ length: 60 }, (_, i) => `Rule ${i + 1}: be precise and keep the workspace tidy.`).join(
          '\n',
        ),
      };
    },
  };
  const switchModel: Plugin = {
    name: 'model-switch',
    request: (config, context) =>
      context.sessionId === 'switch' && context.turn >= 2 ? { ...config, model: TEST_MODEL_2 } : config,
  };
  const mutator: Plugin = {
    name: 'mutator',
    onRequest: (request, context) => {
      if (context.sessionId === 'mutate') (request.messages as unknown[]).push({ role: 'user', content: 'sneaky' });
    },
  };
  const cloner: Plugin = {
    name: 'cloner',
    onRequest: (request, context) => {
      // Only the first turn: the session carries on after it.
      if (context.sessionId !== 'clone' || context.turn > 1) return;
      const copy = JSON.parse(JSON.stringify(request)) as { messages: unknown[] };
      copy.messages.push({ role: 'user', content: 'sneaky' });
      return deepFreeze(copy) as unknown as typeof request;
    },
  };
  const throwingObserver: Plugin = {
    name: 'throwing-observer',
    onStreamDelta: () => {
      observerCalls++;
      throw new Error('observer bug');
    },
    onModelCall: (report, context) => {
      modelCalls.push(
        `${context.sessionId}:${context.turn}.${context.step}:${report.outcome}:${report.usage ? 'usage' : '-'}`,
      );
      throw new Error('observer bug');
    },
  };
  beforeAll(async () => {
    h = await startHarness({
      script: {
        cache: 'deepseek',
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'turn one' }, ...echo('s1') },
          { match: { lastUserContains: 'turn one' }, text: 'one done' },
          { match: { lastUserContains: 'turn two' }, ...echo('s2') },
          { match: { lastUserContains: 'turn two' }, text: 'two done' },
          { match: { lastUserContains: 'turn three' }, text: 'three done' },
          { match: { lastUserContains: 'repeat' }, ...echo('r1', 'same') },
          { match: { lastUserContains: 'repeat' }, ...echo('r2', 'same') },
          { match: { lastUserContains: 'repeat' }, text: 'ok, stopping' },
          { match: { lastUserContains: 'sneak' }, text: 'never sent', repeat: 2 },
          { match: { lastUserContains: 'afterwards' }, text: 'carrying on' },
        ],
      },
      tools: [echoTool],
      plugins: [longPrefix, switchModel, mutator, cloner, throwingObserver, repeatGuardPlugin()],
    });
  });
  afterAll(async () => h?.stop());

  it('a plugin that changes the model mid-session yields exactly one header change and a cache drop at that step only', async () => {
    const handle = await h.start('switch');
    // One turn at a time: this is about the model switch, not about followups queued behind a running turn
    // (two of them logged by concurrent appenders can be claimed out of arrival order, a known defect).
    let events: SessionEvent[] = [];
    for (const [index, text] of ['turn one', 'turn two', 'turn three'].entries()) {
      await handle.signal(followupSignal, { content: text });
      events = await waitForTurnEnd(h.store, 'switch', index + 1);
    }
    const headers = events.flatMap((e) =>
      e.type === 'request/header' ? [`${e.turn}.${e.step}:${e.reason}:${e.header.config.model}`] : [],
    );
    expect(headers).toEqual(['1.1:initial:scripted-model', `2.1:change:${TEST_MODEL_2}`]);
    const reads = events.flatMap((e) =>
      e.type === 'assistant/message' ? [[`${e.turn}.${e.step}`, e.usage?.cacheRead ?? -1] as const] : [],
    );
    expect(reads.map(([step]) => step)).toEqual(['1.1', '1.2', '2.1', '2.2', '3.1']);
    const dropped = reads.filter(([, read]) => read === 0).map(([step]) => step);
    expect(dropped).toEqual(['1.1', '2.1']); // the first request ever, and the step whose model changed
    await expectProviderSawTheLog(h, ['switch']);
    expect(observerCalls).toBeGreaterThan(0); // the throwing stream observer ran and was contained
    // ... and so did the model-call observer: one report per provider call, each step's answer intact
    expect(modelCalls.filter((c) => c.startsWith('switch:'))).toEqual(
      ['1.1', '1.2', '2.1', '2.2', '3.1'].map((step) => `switch:${step}:ok:usage`),
    );
  });

  it('the repeat guard leaves a notice for the next step, logged as injected context', async () => {
    const handle = await h.start('repeat');
    await handle.signal(followupSignal, { content: 'repeat yourself' });
    const events = await waitForTurnEnd(h.store, 'repeat', 1);
    const notice = events.find((e) => e.type === 'user/message' && e.source === 'repeat-guard');
    expect(notice).toMatchObject({ turn: 1, step: 3, origin: 'inject' });
    expect(notice?.type === 'user/message' && JSON.stringify(notice.content)).toMatch(/identical arguments 2 times/);
    await expectProviderSawTheLog(h, ['repeat']);
  });

  it('a plugin that mutates the frozen request fails the step; one that hands on an edited clone is stopped by the gate', async () => {
    const before = h.provider.requests().length;
    const mutate = await h.start('mutate');
    await mutate.signal(followupSignal, { content: 'sneak one' });
    const mutated = await waitForTurnEnd(h.store, 'mutate', 1);
    expect(turnEnds(mutated)).toEqual(['1:error:INTERNAL']);
    expect(mutated.find((e) => e.type === 'turn/end')).toMatchObject({
      error: { message: expect.stringMatching(/read only|not extensible|frozen/i) },
    });
    const clone = await h.start('clone');
    await clone.signal(followupSignal, { content: 'sneak two' });
    const cloned = await waitForTurnEnd(h.store, 'clone', 1);
    expect(turnEnds(cloned)).toEqual(['1:error:REQUEST_DIVERGES_FROM_LOG']);
    expect(cloned.some((e) => e.type === 'request/sent' || e.type === 'assistant/message')).toBe(false);
    expect(h.provider.requests().length).toBe(before); // the provider was never called
    // The failed first turn logged the instance's header: the next turn is the same loop instance (no
    // `resume` header, no second session prefix), and its unchanged header is not logged again.
    await clone.signal(followupSignal, { content: 'afterwards, carry on' });
    const after = await waitForTurnEnd(h.store, 'clone', 2);
    expect(turnEnds(after)).toEqual(['1:error:REQUEST_DIVERGES_FROM_LOG', '2:completed']);
    expect(after.flatMap((e) => (e.type === 'request/header' ? [`${e.turn}.${e.step}:${e.reason}`] : []))).toEqual([
      '1.1:initial',
    ]);
    expect(prefixesOf.get('clone')).toBe(1);
  });
});
