// Fields and values added to the log format without a version bump (docs/log-format.md, evolution
// policy): a log that carries them loads, a log written before them loads unchanged, and a bad value of
// one is refused like any other.
import { describe, expect, it } from 'vitest';
import { ErrorCode, Session, SESSION_FORMAT_VERSION, type EventDraft } from '../../src/core/index.js';

function session(): Session {
  const s = new Session('s-added');
  s.append({ type: 'session/start', at: 1, sessionId: 's-added', formatVersion: SESSION_FORMAT_VERSION });
  s.append({
    type: 'inbox/enqueue',
    at: 2,
    messageId: 'm1',
    target: 'next-turn',
    wakeup: true,
    origin: 'followup',
    content: 'hi',
  });
  s.append({ type: 'turn/start', at: 3, turn: 1 });
  s.append({ type: 'inbox/claim', at: 3, turn: 1, step: 1, messageIds: ['m1'] });
  s.append({ type: 'step/start', at: 3, turn: 1, step: 1 });
  return s;
}

const header = (extra: Record<string, unknown>): EventDraft => ({
  type: 'request/header',
  at: 4,
  turn: 1,
  step: 1,
  reason: 'initial',
  header: { config: { provider: 'llama', model: 'm', maxTokens: 2048 }, ...extra },
});

describe('additive fields and values', () => {
  it("a header's contextWindow is recorded and read back as the header in force", () => {
    const s = session();
    s.append(header({ contextWindow: 8192 }));
    expect(s.requestHeader()).toEqual({
      config: { provider: 'llama', model: 'm', maxTokens: 2048 },
      contextWindow: 8192,
    });
    // Reloading the same events (as a store does) gives the same header.
    expect(new Session('s-added', s.events).requestHeader()?.contextWindow).toBe(8192);
  });

  it('a header without one (written before it existed) still loads', () => {
    const s = session();
    s.append(header({}));
    expect(s.requestHeader()?.contextWindow).toBeUndefined();
  });

  it.each([0, -1, 1.5, '8192'])('refuses contextWindow %j', (value) => {
    const s = session();
    let error: unknown;
    try {
      s.append(header({ contextWindow: value }));
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: ErrorCode.InvalidEvent });
    expect((error as Error).message).toMatch(/event\.header\.contextWindow/);
  });

  it('a turn can end truncated, and the log says so', () => {
    const s = session();
    s.append(header({ contextWindow: 8192 }));
    s.append({ type: 'request/sent', at: 5, turn: 1, step: 1, digest: `sha256:${'0'.repeat(64)}`, bytes: 10 });
    s.append({
      type: 'assistant/message',
      at: 6,
      turn: 1,
      step: 1,
      content: 'and then the',
      toolCalls: [],
      finishReason: 'length',
    });
    s.append({ type: 'step/end', at: 6, turn: 1, step: 1 });
    s.append({
      type: 'turn/end',
      at: 6,
      turn: 1,
      reason: 'truncated',
      error: { code: 'ANSWER_TRUNCATED', message: 'cut at the output limit' },
    });
    expect(s.state.lastTurnEnd).toMatchObject({ turn: 1, reason: 'truncated' });
    expect(new Session('s-added', s.events).state.lastTurnEnd?.reason).toBe('truncated');
  });
});
