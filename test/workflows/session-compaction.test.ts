// Compaction on the real stack: token pressure (prune first, then a summary), the manual update, a
// context overflow mid-turn, a summary request that shares the previous request's cached prefix, and
// a long tool-using session that stays bounded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPACTION_INSTRUCTION, deriveMessages, type SessionEvent } from '../../src/core/index.js';
import { compactUpdate, followupSignal } from '../../src/shared/session-messages.js';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import { omittedNotice } from '../../src/activities/compact.js';
import { echoTool } from '../helpers/test-tools.js';
import {
  expectProviderSawTheLog,
  startHarness,
  waitForState,
  waitForTurnEnd,
  type Harness,
} from '../helpers/session-harness.js';

const SUMMARIZE = COMPACTION_INSTRUCTION.slice(0, 40);
const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [`${e.turn}:${e.reason}`] : []));
const compactions = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'compact/start' ? [e.trigger] : e.type === 'compact/end' ? [e.outcome] : []));
const bigEcho = (id: string) => ({
  toolCalls: [{ id, name: 'echo', arguments: JSON.stringify({ text: 'lorem ipsum '.repeat(60) }) }],
});

describe('compaction', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      contextWindow: 1_800,
      script: {
        cache: 'deepseek',
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: SUMMARIZE },
            text: 'The user asked for several echoes; all of them worked. Nothing is pending.',
            repeat: 20,
          },
          {
            match: { lastUserContains: 'overflow once' },
            fault: {
              kind: 'status',
              status: 400,
              code: 'context_length_exceeded',
              message: "This model's maximum context length is 2500 tokens.",
            },
          },
          { match: { lastUserContains: 'overflow once' }, text: 'fine after compacting' },
          {
            match: { lastUserContains: 'overflow twice' },
            fault: {
              kind: 'status',
              status: 400,
              code: 'context_length_exceeded',
              message: "This model's maximum context length is 2500 tokens.",
            },
            repeat: 2,
          },
          ...Array.from({ length: 12 }, (_, i) => [
            { match: { lastUserContains: `echo ${i + 1} ` }, ...bigEcho(`e${i + 1}`) },
            { match: { lastUserContains: `echo ${i + 1} ` }, text: `echoed ${i + 1}` },
          ]).flat(),
          { match: { lastUserContains: 'small talk' }, text: 'hello', repeat: 10 },
        ],
      },
      tools: [echoTool],
    });
  });
  afterAll(async () => h?.stop());

  it('token pressure prunes old tool outputs, then summarizes; the summary request shares the cached prefix', async () => {
    const handle = await h.start('pressure', { keepRecentTurns: 1, pruneMinChars: 200 });
    for (let i = 1; i <= 8; i++) await handle.signal(followupSignal, { content: `echo ${i} please` });
    const events = await waitForTurnEnd(h.store, 'pressure', 8, 60_000);
    expect(turnEnds(events)).toEqual(Array.from({ length: 8 }, (_, i) => `${i + 1}:completed`));
    const triggers = events.flatMap((e) => (e.type === 'compact/start' ? [e.trigger] : []));
    expect(triggers).toContain('prune');
    expect(triggers).toContain('pressure');
    const pruned = events.filter((e) => e.type === 'surface/replace' && e.messages[0]?.role === 'tool');
    expect(pruned.length).toBeGreaterThan(0);
    const summary = events.find((e) => e.type === 'compact/summary');
    expect(summary).toBeDefined();
    // The summary request is the next step's request plus the instruction: the provider's cache
    // served the shared prefix.
    expect(summary?.type === 'compact/summary' && (summary.usage?.cacheRead ?? 0)).toBeGreaterThan(0);
    // Requests stay bounded: the surface after the last compaction is smaller than before it.
    expect(summary?.type === 'compact/summary' && summary.tokensAfter < summary.tokensBefore).toBe(true);
    await expectProviderSawTheLog(h, ['pressure']);
    expect((await checkHistoryMirror(h.client, h.store, 'pressure')).problem).toBeNull();
  });

  it('the manual update compacts an idle session; the next turn starts from the compacted surface', async () => {
    const handle = await h.start('manual', { compactAt: 0, keepRecentTurns: 0 });
    await handle.signal(followupSignal, { content: 'small talk 1' });
    await handle.signal(followupSignal, { content: 'small talk 2' });
    await waitForTurnEnd(h.store, 'manual', 2);
    await handle.executeUpdate(compactUpdate, { args: [{}] });
    await waitForState(handle, (s) => s.compactions === 1);
    let events = await h.store.read('manual');
    expect(compactions(events)).toEqual(['manual', 'applied']);
    expect(deriveMessages(events)).toHaveLength(1);
    await handle.signal(followupSignal, { content: 'small talk 3' });
    events = await waitForTurnEnd(h.store, 'manual', 3);
    expect(deriveMessages(events).map((m) => m.role)).toEqual(['user', 'user', 'assistant']);
    await expectProviderSawTheLog(h, ['manual']);
  });

  it('a context overflow ends the step with its error, compacts, and a new step of the same turn succeeds — once', async () => {
    const handle = await h.start('overflow', { compactAt: 0, keepRecentTurns: 1 });
    await handle.signal(followupSignal, { content: 'small talk first' });
    await waitForTurnEnd(h.store, 'overflow', 1);
    await handle.signal(followupSignal, { content: 'overflow once' });
    const events = await waitForTurnEnd(h.store, 'overflow', 2);
    expect(events.find((e) => e.type === 'step/end' && e.turn === 2 && e.step === 1)).toMatchObject({
      error: { code: 'CONTEXT_LENGTH_EXCEEDED' },
    });
    expect(compactions(events)).toEqual(['overflow', 'applied']);
    expect(turnEnds(events)).toEqual(['1:completed', '2:completed']);
    expect(events.find((e) => e.type === 'assistant/message' && e.turn === 2)).toMatchObject({
      step: 2,
      content: 'fine after compacting',
    });
    await handle.signal(followupSignal, { content: 'overflow twice' });
    const after = await waitForTurnEnd(h.store, 'overflow', 3);
    expect(after.find((e) => e.type === 'turn/end' && e.turn === 3)).toMatchObject({
      reason: 'error',
      error: { code: 'CONTEXT_LENGTH_EXCEEDED' },
    });
    // The log holds turn/end before the workflow has taken closeTurn's result: wait for the state to catch up.
    await waitForState(handle, (s) => s.status === 'idle' && s.lastTurnEnd?.turn === 3);
  });
});

describe('compaction when the summary request does not fit either', () => {
  let h: Harness;
  const overflow = {
    kind: 'status',
    status: 400,
    code: 'context_length_exceeded',
    message: "This model's maximum context length is 2500 tokens.",
  } as const;
  beforeAll(async () => {
    h = await startHarness({
      script: {
        cache: 'deepseek',
        mode: 'match',
        replies: [
          { match: { lastUserContains: SUMMARIZE }, fault: overflow, repeat: 10 },
          { match: { lastUserContains: 'big note' }, fault: overflow },
          { match: { lastUserContains: 'big note' }, text: 'fine without the oldest turn' },
          { match: { lastUserContains: 'small talk' }, text: 'hello', repeat: 10 },
        ],
      },
    });
  });
  afterAll(async () => h?.stop());

  it('drops the oldest turns from the surface (they stay in the log) and the turn carries on', async () => {
    const handle = await h.start('summary-overflow', { compactAt: 0, keepRecentTurns: 1 });
    await handle.signal(followupSignal, { content: 'small talk first' });
    await waitForTurnEnd(h.store, 'summary-overflow', 1);
    await handle.signal(followupSignal, { content: 'big note: ' + 'lorem ipsum '.repeat(40) });
    const events = await waitForTurnEnd(h.store, 'summary-overflow', 2);
    expect(turnEnds(events)).toEqual(['1:completed', '2:completed']);
    expect(compactions(events)).toEqual(['overflow', 'applied']);
    expect(events.some((e) => e.type === 'compact/summary')).toBe(false);
    // The refused summary request is logged with its digest (expectProviderSawTheLog re-derives it).
    expect(events.filter((e) => e.type === 'compact/refused')).toMatchObject([
      { error: { code: 'CONTEXT_LENGTH_EXCEEDED' } },
    ]);
    // Turn 1 (its question and answer) became one notice; turn 2 is whole, answered in its second step.
    const surface = deriveMessages(events);
    expect(surface[0]).toEqual({ role: 'user', content: omittedNotice(2) });
    expect(surface.slice(1).map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(surface.at(-1)).toMatchObject({ content: 'fine without the oldest turn' });
    expect(events.filter((e) => e.type === 'user/message').map((e) => e.content)).toContain('small talk first');
    await expectProviderSawTheLog(h, ['summary-overflow']);
    expect((await checkHistoryMirror(h.client, h.store, 'summary-overflow')).problem).toBeNull();
  });
});
