// Every class of bad event input is refused with an error naming the session, the seq and the
// problem, and nothing is appended.
import { describe, expect, it } from 'vitest';
import { ErrorCode, parseEvent, Session, SESSION_FORMAT_VERSION, type EventDraft } from '../../src/core/index.js';

function freshSession(): Session {
  const session = new Session('s-bad');
  session.append({ type: 'session/start', at: 1, sessionId: 's-bad', formatVersion: SESSION_FORMAT_VERSION });
  return session;
}

const enqueue = (content: unknown): EventDraft =>
  ({
    type: 'inbox/enqueue',
    at: 2,
    messageId: 'm1',
    target: 'next-turn',
    wakeup: true,
    origin: 'followup',
    content,
  }) as EventDraft;

describe('event validation on append', () => {
  const cases: Array<[string, EventDraft, RegExp]> = [
    ['undefined', enqueue(undefined), /content is undefined/],
    ['NaN', { type: 'turn/start', at: Number.NaN, turn: 1 }, /at is NaN/],
    ['Infinity', { type: 'turn/start', at: Number.POSITIVE_INFINITY, turn: 1 }, /at is Infinity/],
    ['-Infinity', { type: 'turn/start', at: 3, turn: Number.NEGATIVE_INFINITY }, /turn is -Infinity/],
    ['-0', { type: 'turn/start', at: -0, turn: 1 }, /at is -0/],
    ['BigInt', { type: 'turn/start', at: 3, turn: 1n } as unknown as EventDraft, /turn is a BigInt/],
    ['a Date', enqueue(new Date(0)), /content is a Date/],
    ['a Map', enqueue(new Map()), /content is a Map/],
    // eslint-disable-next-line no-sparse-arrays -- a hole is the bad input under test
    ['a sparse array', enqueue([{ type: 'text', text: 'a' }, , { type: 'text', text: 'b' }]), /content\[1\] is a hole/],
    ['an unknown type', { type: 'agent/thought', at: 3 } as unknown as EventDraft, /event.type/],
    ['an extra field', { type: 'turn/start', at: 3, turn: 1, extra: true } as EventDraft, /Unrecognized key/],
    ['a missing field', { type: 'turn/start', at: 3 } as EventDraft, /event.turn/],
    [
      'a removed header reason',
      { type: 'request/header', at: 3, turn: 1, step: 1, reason: 'fallback', header: {} } as unknown as EventDraft,
      /event.reason/,
    ],
    ['a delta-style header event', { type: 'request/header-delta', at: 3 } as unknown as EventDraft, /event.type/],
  ];

  it.each(cases)('refuses %s with session, seq and problem; nothing appended', (_name, draft, problem) => {
    const session = freshSession();
    let error: unknown;
    try {
      session.append(draft);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: ErrorCode.InvalidEvent, details: { sessionId: 's-bad', seq: 1 } });
    expect((error as Error).message).toMatch(/session "s-bad" at seq 1/);
    expect((error as Error).message).toMatch(problem);
    expect(session.head).toBe(1);
  });

  it('refuses a cycle', () => {
    const content: Record<string, unknown> = { type: 'text' };
    content.self = content;
    expect(() => freshSession().append(enqueue([content]))).toThrow(/is a cycle/);
  });

  it('refuses an event whose key does not match its slot, and a wrong seq, on load', () => {
    const good = {
      seq: 0,
      at: 1,
      key: 'session/start',
      type: 'session/start',
      sessionId: 's',
      formatVersion: SESSION_FORMAT_VERSION,
    };
    expect(() => parseEvent('s', { ...good, key: 'other' }, 0)).toThrow(
      /key "other" does not match its slot "session\/start"/,
    );
    expect(() => parseEvent('s', good, 4)).toThrow(/seq is 0, expected 4/);
    expect(() => new Session('s', [good, { ...good, seq: 1 }])).toThrow(
      /session "s" seq 1: session\/start: only allowed at seq 0/,
    );
  });

  it('refuses an unknown format version', () => {
    expect(
      () =>
        new Session('s', [
          { seq: 0, at: 1, key: 'session/start', type: 'session/start', sessionId: 's', formatVersion: 99 },
        ]),
    ).toThrow(/formatVersion/);
  });

  it('a batch with one bad event appends none of it', () => {
    const session = freshSession();
    expect(() =>
      session.append({ type: 'turn/start', at: 2, turn: 1 }, { type: 'turn/start', at: 2, turn: 2 }),
    ).toThrow(/turn 1 is still open/);
    expect(session.head).toBe(1);
    expect(session.state.openTurn).toBeNull();
    session.append({ type: 'turn/start', at: 2, turn: 1 });
    expect(session.state.openTurn).toBe(1);
  });

  it('stored events are frozen copies', () => {
    const session = freshSession();
    const draft = { type: 'turn/start', at: 2, turn: 1 } as EventDraft;
    const [event] = session.append(draft);
    expect(Object.isFrozen(event)).toBe(true);
    (draft as { at: number }).at = 99;
    expect(session.events[1]?.at).toBe(2);
  });
});
