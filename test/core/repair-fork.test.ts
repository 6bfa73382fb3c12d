// Crash repair closes what a crash left open by appending (never truncating); fork copies a prefix
// that does not end inside a turn.
import { describe, expect, it } from 'vitest';
import {
  ErrorCode,
  forkEvents,
  repairDrafts,
  Session,
  TOOL_NOT_STARTED,
  TOOL_OUTCOME_UNKNOWN,
  canonicalJson,
} from '../../src/core/index.js';
import { LogDriver } from '../helpers/log-generator.js';

function crashedMidTool(): Session {
  const driver = new LogDriver('s-crash').run([{ kind: 'send', origin: 'followup', text: 'go' }]);
  const s = driver.session;
  driver.append(
    { type: 'turn/start', at: 3, turn: 1 },
    { type: 'inbox/claim', at: 3, turn: 1, step: 1, messageIds: ['m1'] },
    { type: 'step/start', at: 3, turn: 1, step: 1 },
    { type: 'request/sent', at: 3, turn: 1, step: 1, digest: `sha256:${'0'.repeat(64)}`, bytes: 1 },
    {
      type: 'assistant/message',
      at: 3,
      turn: 1,
      step: 1,
      content: null,
      toolCalls: [
        { id: 'a', name: 'shell', arguments: '{}' },
        { id: 'b', name: 'shell', arguments: '{}' },
      ],
      finishReason: 'tool_calls',
    },
    { type: 'tool/start', at: 3, turn: 1, step: 1, callId: 'a', name: 'shell' },
  );
  return s;
}

describe('crash repair', () => {
  it('answers open calls (interrupted if started, skipped if not) and ends step and turn', () => {
    const s = crashedMidTool();
    const before = s.events.map((e) => canonicalJson(e));
    const drafts = repairDrafts(s, 100);
    expect(drafts.map((d) => [d.type, 'status' in d ? d.status : null])).toEqual([
      ['tool/result', 'interrupted'],
      ['tool/result', 'skipped'],
      ['step/end', null],
      ['turn/end', null],
    ]);
    s.append(...drafts);
    expect(s.events.slice(0, before.length).map((e) => canonicalJson(e))).toEqual(before);
    expect(s.state.openTurn).toBeNull();
    expect(s.events.at(-1)).toMatchObject({ type: 'turn/end', reason: 'interrupted' });
    expect(s.deriveMessages().slice(-2)).toEqual([
      { role: 'tool', toolCallId: 'a', content: TOOL_OUTCOME_UNKNOWN },
      { role: 'tool', toolCallId: 'b', content: TOOL_NOT_STARTED },
    ]);
    expect(repairDrafts(s, 101)).toEqual([]);
  });

  it('abandons an open compaction', () => {
    const driver = new LogDriver('s-c').run([
      { kind: 'step', toolCalls: 0, text: 'x', changeHeader: false, skipLastTool: false },
      { kind: 'end-turn' },
    ]);
    driver.append({ type: 'compact/start', at: 5, compactionId: 'k', trigger: 'pressure' });
    expect(repairDrafts(driver.session, 6)).toEqual([
      { type: 'compact/end', at: 6, compactionId: 'k', outcome: 'abandoned' },
    ]);
  });

  it('a clean log needs nothing', () => {
    const driver = new LogDriver('s-ok').run([
      { kind: 'step', toolCalls: 1, text: 'x', changeHeader: false, skipLastTool: false },
      { kind: 'end-turn' },
    ]);
    expect(repairDrafts(driver.session, 1)).toEqual([]);
  });
});

describe('fork', () => {
  const parent = () =>
    new LogDriver('parent').run([
      { kind: 'send', origin: 'followup', text: 'one' },
      { kind: 'step', toolCalls: 1, text: 'a', changeHeader: false, skipLastTool: false },
      { kind: 'end-turn' },
      { kind: 'send', origin: 'followup', text: 'two' },
      { kind: 'step', toolCalls: 0, text: 'b', changeHeader: false, skipLastTool: false },
    ]).session;

  it('copies a prefix that ends at a turn boundary, records parent and seed length, marks the seed end', () => {
    const p = parent();
    const boundary = p.events.findIndex((e) => e.type === 'turn/end') + 1;
    const events = forkEvents(p, { sessionId: 'child', atSeq: boundary, at: 999 });
    expect(events[0]).toMatchObject({
      type: 'session/start',
      sessionId: 'child',
      parent: { sessionId: 'parent', seedLength: boundary },
    });
    expect(events.at(-1)).toMatchObject({ type: 'session/seed-end', seq: boundary });
    expect(events.slice(1, boundary)).toEqual(p.events.slice(1, boundary));
    const child = new Session('child', events);
    expect(child.deriveMessages()).toEqual(new Session('parent', p.events.slice(0, boundary)).deriveMessages());
    // A fork of the fork keeps working (the first seed marker is history).
    const grandchild = forkEvents(child, { sessionId: 'grandchild', atSeq: child.head, at: 1000 });
    expect(new Session('grandchild', grandchild).state.seedEnded).toBe(true);
  });

  it('refuses a boundary inside an open turn, out of range, or onto the same id', () => {
    const p = parent();
    const inside = p.events.findIndex((e) => e.type === 'step/start') + 1;
    expect(() => forkEvents(p, { sessionId: 'c', atSeq: inside, at: 1 })).toThrow(/turn 1 is open at that point/);
    expect(() => forkEvents(p, { sessionId: 'c', atSeq: p.head + 1, at: 1 })).toThrow(/between 1 and/);
    expect(() => forkEvents(p, { sessionId: 'parent', atSeq: 1, at: 1 })).toThrow(
      expect.objectContaining({ code: ErrorCode.ForkBoundary }),
    );
  });
});
