// Structural rules enforced on append: turn/step nesting, tool-call pairing, claims, replaces.
import { describe, expect, it } from 'vitest';
import { ErrorCode, Session, SESSION_FORMAT_VERSION, type EventDraft } from '../../src/core/index.js';
import { header } from '../helpers/log-generator.js';

const at = 5;
const call = (id: string) => ({ id, name: 'read_file', arguments: '{}' });

/** A session with turn 1, step 1 open and one queued followup claimed. */
function openStep(): Session {
  const s = new Session('s-struct');
  s.append(
    { type: 'session/start', at, sessionId: 's-struct', formatVersion: SESSION_FORMAT_VERSION },
    {
      type: 'inbox/enqueue',
      at,
      messageId: 'm1',
      target: 'next-turn',
      wakeup: true,
      origin: 'followup',
      content: 'hi',
    },
    { type: 'turn/start', at, turn: 1 },
    { type: 'inbox/claim', at, turn: 1, step: 1, messageIds: ['m1'] },
    { type: 'step/start', at, turn: 1, step: 1 },
    { type: 'user/message', at, turn: 1, step: 1, messageId: 'm1', origin: 'followup', content: 'hi' },
    { type: 'request/header', at, turn: 1, step: 1, reason: 'initial', header: header(1) },
  );
  return s;
}

/** The step's recorded request: the model's answer must follow one. */
const sent: EventDraft = { type: 'request/sent', at, turn: 1, step: 1, digest: `sha256:${'0'.repeat(64)}`, bytes: 1 };

function withToolCalls(...ids: string[]): Session {
  const s = openStep();
  s.append(sent, {
    type: 'assistant/message',
    at,
    turn: 1,
    step: 1,
    content: null,
    toolCalls: ids.map(call),
    finishReason: 'tool_calls',
  });
  return s;
}

const result = (callId: string, extra: Partial<EventDraft> = {}): EventDraft =>
  ({
    type: 'tool/result',
    at,
    turn: 1,
    step: 1,
    callId,
    name: 'read_file',
    output: 'ok',
    status: 'ok',
    ...extra,
  }) as EventDraft;

function refuse(session: Session, drafts: EventDraft[], problem: RegExp): void {
  const head = session.head;
  let error: unknown;
  try {
    session.append(...drafts);
  } catch (e) {
    error = e;
  }
  expect(error, `expected refusal matching ${problem}`).toMatchObject({ code: ErrorCode.LogStructure });
  expect((error as Error).message).toMatch(/session "s-struct" seq \d+/);
  expect((error as Error).message).toMatch(problem);
  expect(session.head).toBe(head);
}

describe('log structure', () => {
  it('the first event must be session/start', () => {
    expect(() => new Session('x').append({ type: 'turn/start', at, turn: 1 })).toThrow(
      /first event must be session\/start/,
    );
  });

  it('turns and steps nest and count up', () => {
    const s = openStep();
    refuse(s, [{ type: 'turn/start', at, turn: 2 }], /turn 1 is still open/);
    refuse(s, [{ type: 'step/start', at, turn: 1, step: 2 }], /step 1 is still open/);
    refuse(s, [{ type: 'turn/end', at, turn: 1, reason: 'completed' }], /step 1 is still open/);
    refuse(s, [{ type: 'step/end', at, turn: 2, step: 1 }], /step 2.1 is not open/);
    s.append({ type: 'step/end', at, turn: 1, step: 1 });
    refuse(s, [{ type: 'step/start', at, turn: 1, step: 3 }], /expected step 2/);
    s.append({ type: 'turn/end', at, turn: 1, reason: 'completed' });
    refuse(s, [{ type: 'turn/start', at, turn: 3 }], /expected turn 2/);
    refuse(s, [{ type: 'turn/end', at, turn: 1, reason: 'completed' }], /turn 1 is not open/);
  });

  it("a model answer must follow its step's recorded request, and a step records one request", () => {
    const s = openStep();
    const answer: EventDraft = {
      type: 'assistant/message',
      at,
      turn: 1,
      step: 1,
      content: 'hi',
      toolCalls: [],
      finishReason: 'stop',
    };
    refuse(s, [answer], /seq 7: assistant\/message: step 1\.1 has no recorded request/);
    s.append(sent);
    refuse(s, [sent], /step 1\.1 already recorded its request \(seq 7\)/);
    s.append(answer);
    // Loading is held to the same rule: the log without its request/sent is refused at the answer's seq.
    const withoutRequest = s.events.filter((e) => e.type !== 'request/sent').map((e, seq) => ({ ...e, seq }));
    expect(() => new Session('s-struct', withoutRequest)).toThrow(
      /seq 7: assistant\/message: step 1\.1 has no recorded request/,
    );
  });

  it('a tool result must answer an open call of the same step, once', () => {
    const s = withToolCalls('c1', 'c2');
    refuse(s, [result('nope')], /no tool call "nope" in this step/);
    refuse(s, [result('c1', { name: 'shell' })], /is "read_file", not "shell"/);
    s.append(result('c1'));
    refuse(s, [result('c1')], /already has a result/);
    refuse(s, [result('c2', { step: 2 })], /step 1.2 is not open/);
  });

  it('no step/end or turn/end while a tool call is unanswered', () => {
    const s = withToolCalls('c1', 'c2');
    s.append(result('c1'));
    refuse(s, [{ type: 'step/end', at, turn: 1, step: 1 }], /tool calls without a result: c2/);
    s.append(
      result('c2'),
      { type: 'step/end', at, turn: 1, step: 1 },
      { type: 'turn/end', at, turn: 1, reason: 'completed' },
    );
  });

  it('no surface message between tool calls and their results', () => {
    const s = withToolCalls('c1');
    s.append({
      type: 'inbox/enqueue',
      at,
      messageId: 'm2',
      target: 'next-step',
      wakeup: true,
      origin: 'steer',
      content: 'steer',
    });
    refuse(
      s,
      [{ type: 'user/message', at, turn: 1, step: 1, messageId: 'm2', origin: 'steer', content: 'x' }],
      /already has the model response/,
    );
    refuse(
      s,
      [{ type: 'assistant/message', at, turn: 1, step: 1, content: 'again', toolCalls: [], finishReason: 'stop' }],
      /already has the model response/,
    );
  });

  it('a tool call starts at most once and only if it exists', () => {
    const s = withToolCalls('c1');
    s.append({ type: 'tool/start', at, turn: 1, step: 1, callId: 'c1', name: 'read_file' });
    refuse(s, [{ type: 'tool/start', at, turn: 1, step: 1, callId: 'c1', name: 'read_file' }], /already started/);
    refuse(s, [{ type: 'tool/start', at, turn: 1, step: 1, callId: 'c9', name: 'read_file' }], /no tool call "c9"/);
  });

  it('claims: only queued messages, next-turn first and only at a turn boundary, user messages only when claimed', () => {
    const s = openStep();
    refuse(
      s,
      [{ type: 'user/message', at, turn: 1, step: 1, messageId: 'm9', origin: 'steer', content: 'x' }],
      /was not claimed/,
    );
    s.append(
      sent,
      { type: 'assistant/message', at, turn: 1, step: 1, content: 'done', toolCalls: [], finishReason: 'stop' },
      { type: 'step/end', at, turn: 1, step: 1 },
    );
    s.append(
      {
        type: 'inbox/enqueue',
        at,
        messageId: 'f2',
        target: 'next-turn',
        wakeup: true,
        origin: 'followup',
        content: 'later',
      },
      {
        type: 'inbox/enqueue',
        at,
        messageId: 's1',
        target: 'next-step',
        wakeup: true,
        origin: 'steer',
        content: 'now',
      },
    );
    refuse(
      s,
      [{ type: 'inbox/claim', at, turn: 1, step: 2, messageIds: ['f2'] }],
      /only be claimed at a turn's first step/,
    );
    refuse(s, [{ type: 'inbox/claim', at, turn: 1, step: 2, messageIds: ['m1'] }], /"m1" is not queued/);
    refuse(s, [{ type: 'inbox/claim', at, turn: 1, step: 3, messageIds: ['s1'] }], /next step is 2/);
    s.append({ type: 'inbox/claim', at, turn: 1, step: 2, messageIds: ['s1'] });
    refuse(
      s,
      [
        {
          type: 'inbox/enqueue',
          at,
          messageId: 's1',
          target: 'next-step',
          wakeup: true,
          origin: 'steer',
          content: 'dup',
        },
      ],
      /already enqueued/,
    );
    s.append(
      { type: 'step/start', at, turn: 1, step: 2 },
      { type: 'step/end', at, turn: 1, step: 2 },
      { type: 'turn/end', at, turn: 1, reason: 'completed' },
    );
    s.append({
      type: 'inbox/enqueue',
      at,
      messageId: 'f3',
      target: 'next-turn',
      wakeup: true,
      origin: 'followup',
      content: 'x',
    });
    s.append({ type: 'turn/start', at, turn: 2 });
    refuse(
      s,
      [{ type: 'inbox/claim', at, turn: 2, step: 1, messageIds: ['f2', 'f3'] }],
      /at most one next-turn message/,
    );
  });

  it('a surface replace covers an existing range and never separates a call from its result', () => {
    const s = withToolCalls('c1');
    s.append(result('c1'), { type: 'step/end', at, turn: 1, step: 1 });
    // Surface: [user hi, assistant(c1), tool c1]
    refuse(
      s,
      [{ type: 'surface/replace', at, replaceId: 'r1', range: { start: 0, end: 5 }, messages: [] }],
      /outside the surface \(length 3\)/,
    );
    refuse(
      s,
      [
        {
          type: 'surface/replace',
          at,
          replaceId: 'r1',
          range: { start: 0, end: 1 },
          messages: [{ role: 'user', content: 'summary' }],
        },
      ],
      /answers no open tool call/,
    );
    refuse(
      s,
      [
        {
          type: 'surface/replace',
          at,
          replaceId: 'r1',
          range: { start: 2, end: 2 },
          messages: [{ role: 'user', content: 'x' }],
        },
      ],
      /separates tool calls from their results/,
    );
    s.append({
      type: 'surface/replace',
      at,
      replaceId: 'r1',
      range: { start: 2, end: 2 },
      messages: [{ role: 'tool', toolCallId: 'c1', content: '[pruned]' }],
    });
    s.append({
      type: 'surface/replace',
      at,
      replaceId: 'r2',
      range: { start: 0, end: 2 },
      messages: [{ role: 'user', content: 'summary' }],
    });
    expect(s.deriveMessages()).toEqual([{ role: 'user', content: 'summary' }]);
    expect(s.replaceGeneration).toBe(2);
  });

  it('no step starts while a compaction is open', () => {
    const s = withToolCalls();
    s.append(
      { type: 'step/end', at, turn: 1, step: 1 },
      { type: 'compact/start', at, compactionId: 'k1', trigger: 'manual' },
    );
    refuse(s, [{ type: 'step/start', at, turn: 1, step: 2 }], /compaction "k1" is in progress/);
    refuse(s, [{ type: 'compact/start', at, compactionId: 'k2', trigger: 'manual' }], /already in progress/);
    s.append(
      { type: 'compact/end', at, compactionId: 'k1', outcome: 'abandoned' },
      { type: 'step/start', at, turn: 1, step: 2 },
    );
  });

  it('a refused summary request belongs to an open compaction and shows nothing to the model', () => {
    const s = withToolCalls();
    s.append({ type: 'step/end', at, turn: 1, step: 1 });
    const refused = {
      type: 'compact/refused',
      at,
      compactionId: 'k1',
      provider: 'local',
      model: 'small',
      maxTokens: 2048,
      requestDigest: `sha256:${'0'.repeat(64)}`,
      requestBytes: 100,
      error: { code: 'CONTEXT_LENGTH_EXCEEDED', message: 'too long' },
    } as const;
    refuse(s, [refused], /compaction "k1" is not in progress/);
    const surface = s.deriveMessages();
    s.append({ type: 'compact/start', at, compactionId: 'k1', trigger: 'overflow' }, refused);
    expect(s.deriveMessages()).toEqual(surface);
    s.append({ type: 'compact/end', at, compactionId: 'k1', outcome: 'abandoned' });
  });

  it('injected context renders as a user message marked with its source; empty model output is invisible', () => {
    const s = new Session('s-struct');
    s.append(
      { type: 'session/start', at, sessionId: 's-struct', formatVersion: SESSION_FORMAT_VERSION },
      {
        type: 'inbox/enqueue',
        at,
        messageId: 'i1',
        target: 'next-step',
        wakeup: false,
        origin: 'inject',
        source: 'ci-bot',
        content: 'branch is main',
      },
      { type: 'turn/start', at, turn: 1 },
      { type: 'inbox/claim', at, turn: 1, step: 1, messageIds: ['i1'] },
      { type: 'step/start', at, turn: 1, step: 1 },
      {
        type: 'user/message',
        at,
        turn: 1,
        step: 1,
        messageId: 'i1',
        origin: 'inject',
        source: 'ci-bot',
        content: 'branch is main',
      },
      sent,
      {
        type: 'assistant/message',
        at,
        turn: 1,
        step: 1,
        content: '',
        toolCalls: [],
        finishReason: null,
        interrupted: true,
      },
    );
    expect(s.deriveMessages()).toEqual([
      { role: 'user', content: '<context source="ci-bot">\nbranch is main\n</context>' },
    ]);
  });
});
