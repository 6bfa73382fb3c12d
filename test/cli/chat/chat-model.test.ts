// What the chat shows, folded from a session's log: the queues a message waits in (and a steer that came
// during an interrupt moving to the next turn), where each claimed message entered, a message being sent
// until the log has it, the running turn, streamed text replaced by the logged answer (with the lines that
// came while it streamed after it), a call waiting for approval (with its short id, and the keys that
// decide it), and the tool policy's denials and remembered rules.
import { describe, expect, it } from 'vitest';
import { approvalKey } from '../../../src/cli/chat/chat-app.js';
import { ChatController } from '../../../src/cli/chat/chat-controller.js';
import { ChatModel } from '../../../src/cli/chat/chat-model.js';
import type { CliContext } from '../../../src/cli/cli-context.js';
import { approvalShortId, type SessionEvent } from '../../../src/core/index.js';
import type { ApprovePayload } from '../../../src/shared/session-messages.js';
import type { DeltaChannel } from '../../../src/streaming/delta-channel.js';
import { assistantMessage, event, T0, turnStart } from '../../helpers/event-builders.js';

const op = (e: SessionEvent) => ({ type: 'event' as const, event: e });
const enqueue = (seq: number, messageId: string, target: 'next-step' | 'next-turn', wakeup: boolean, text: string) =>
  event(
    {
      type: 'inbox/enqueue',
      at: T0,
      messageId,
      target,
      wakeup,
      origin: wakeup ? (target === 'next-step' ? 'steer' : 'followup') : 'inject',
      content: text,
    },
    seq,
  );

const said = (seq: number, messageId: string, origin: 'followup' | 'steer', source: string, content: string) =>
  event({ type: 'user/message', at: T0, turn: 1, step: 1, messageId, origin, source, content }, seq);

/** A step's claim and its user messages, as enter-step logs them. */
const claimed = (
  seq: number,
  turn: number,
  step: number,
  messages: ReadonlyArray<readonly [string, 'followup' | 'steer' | 'inject', string]>,
) => [
  op(event({ type: 'inbox/claim', at: T0, turn, step, messageIds: messages.map(([id]) => id) }, seq)),
  op(event({ type: 'step/start', at: T0, turn, step }, seq + 1)),
  ...messages.map(([messageId, origin, content], i) =>
    op(event({ type: 'user/message', at: T0, turn, step, messageId, origin, source: 'chat', content }, seq + 2 + i)),
  ),
];

/** The logged answer of a step, as the follower hands it over. */
const answered = (seq: number, turn: number, step: number, content: string, interrupted = false) => {
  const answer = assistantMessage(seq, turn, step, content);
  if (answer.type !== 'assistant/message') throw new Error('not an answer');
  const logged = interrupted ? { ...answer, interrupted: true as const } : answer;
  return { type: 'answer' as const, event: logged, rest: '', replaced: false, streamed: true };
};
const texts = (model: ChatModel) => model.linesFrom(0).map((l) => l.text);

describe('chat model', () => {
  it('shows what waits in each queue until a step claims it, and a downgraded steer in the next-turn queue', () => {
    const model = new ChatModel();
    model.apply(op(turnStart(1, 1)));
    expect(model.openTurn).toBe(1);
    model.apply(op(enqueue(2, 's1', 'next-step', true, 'also check the tests')));
    model.apply(op(enqueue(3, 'f2', 'next-turn', true, 'then the docs')));
    model.apply(op(enqueue(4, 'i1', 'next-step', false, 'the build is green')));
    expect(model.waiting.map((w) => [w.messageId, w.queue])).toEqual([
      ['s1', 'step'],
      ['f2', 'turn'],
      ['i1', 'context'],
    ]);
    model.apply(op(event({ type: 'inbox/downgrade', at: T0, messageId: 's1', requested: 'next-step' }, 5)));
    expect(model.waiting.find((w) => w.messageId === 's1')?.queue).toBe('turn');
    expect(model.linesFrom(0).at(-1)?.text).toMatch(
      /"also check the tests" came as the turn was being interrupted: it will start the next turn/,
    );
    model.apply(op(event({ type: 'inbox/claim', at: T0, turn: 1, step: 2, messageIds: ['i1'] }, 6)));
    expect(model.waiting.map((w) => w.messageId)).toEqual(['s1', 'f2']);
    model.apply(op(event({ type: 'turn/end', at: T0, turn: 1, reason: 'aborted' }, 7)));
    expect(model.openTurn).toBeNull();
    expect(model.linesFrom(0).at(-1)).toMatchObject({ kind: 'warn', text: '■ turn 1 aborted' });
  });

  it('streams text live, then prints the logged answer once; says who sent each message', () => {
    const model = new ChatModel();
    model.apply(op(turnStart(1, 1)));
    model.apply(op(said(2, 'mine', 'followup', 'chat', 'hi')));
    model.apply(op(said(3, 'x', 'steer', 'ci-bot', 'faster')));
    expect(new ChatModel().openTurn).toBeNull();
    const early = new ChatModel();
    // Streamed text read before the log's turn/start still means a turn runs.
    early.apply({ type: 'text', turn: 3, step: 1, attempt: 1, text: 'x' });
    expect(early.openTurn).toBe(3);
    model.apply({ type: 'text', turn: 1, step: 1, attempt: 1, text: 'Hel' });
    model.apply({ type: 'text', turn: 1, step: 1, attempt: 1, text: 'lo' });
    expect(model.live).toBe('Hello');
    const answer = assistantMessage(4, 1, 1, 'Hello there');
    if (answer.type !== 'assistant/message') throw new Error('not an answer');
    model.apply({ type: 'answer', event: answer, rest: ' there', replaced: false, streamed: true });
    expect(model.live).toBe('');
    expect(model.linesFrom(0).map((l) => l.text)).toEqual([
      '› you (followup, turn 1): hi',
      '› ci-bot (steer, turn 1): faster',
      'Hello there',
    ]);
  });

  it('holds a call that waits for approval, with its arguments, until it is decided', () => {
    const model = new ChatModel();
    const answer = event(
      {
        type: 'assistant/message',
        at: T0,
        turn: 1,
        step: 1,
        content: null,
        toolCalls: [{ id: 'c1', name: 'shell', arguments: '{"command":"rm -rf build"}' }],
        finishReason: 'tool_calls',
        usage: { inputUncached: 1, cacheRead: 0, output: 1, reasoning: 0 },
      },
      3,
    );
    if (answer.type !== 'assistant/message') throw new Error('not an answer');
    model.apply({ type: 'answer', event: answer, rest: '', replaced: false, streamed: false });
    model.apply(
      op(
        event(
          { type: 'approval/request', at: T0, turn: 1, step: 1, callId: 'c1', name: 'shell', reason: 'shell asks' },
          4,
        ),
      ),
    );
    expect(model.approvals).toEqual([
      {
        callId: 'c1',
        shortId: approvalShortId('c1'),
        name: 'shell',
        args: '{"command":"rm -rf build"}',
        reason: 'shell asks',
      },
    ]);
    expect(model.approvals[0]?.shortId).toMatch(/^[0-9a-f]{5}$/);
    model.apply(op(event({ type: 'approval/decision', at: T0, turn: 1, step: 1, callId: 'c1', decision: 'deny' }, 5)));
    expect(model.approvals).toEqual([]);
  });

  it("notes the policy's denials and remembered rules; an allowed call adds nothing", () => {
    const model = new ChatModel();
    const verdict = {
      type: 'policy/verdict',
      at: T0,
      turn: 1,
      step: 1,
      callId: 'c1',
      name: 'shell',
      version: 'v1',
      inputs: 'sha256:00',
    } as const;
    model.apply(op(event({ ...verdict, outcome: 'allow', by: 'default' }, 3)));
    model.apply(op(event({ ...verdict, outcome: 'deny', by: 'session-rule', rule: 'session:c0', reason: 'no' }, 4)));
    model.apply(
      op(
        event(
          {
            type: 'policy/rule',
            at: T0,
            turn: 1,
            step: 2,
            callId: 'c2',
            rule: { id: 'session:c2', tool: 'write_file', outcome: 'allow' },
          },
          5,
        ),
      ),
    );
    expect(model.linesFrom(0).map((l) => [l.kind, l.text])).toEqual([
      ['warn', '✗ policy denied shell (session rule session:c0): no'],
      ['note', 'remembered for this session: allow write_file'],
    ]);
  });

  it('y / n / a on an empty line decide the waiting call; a remembers the approval for its tool', async () => {
    expect(approvalKey('y')).toEqual({ decision: 'approve' });
    expect(approvalKey('n')).toEqual({ decision: 'deny' });
    expect(approvalKey('a')).toEqual({ decision: 'approve', remember: 'tool' });
    expect(approvalKey('b')).toBeNull();
    const sent: ApprovePayload[] = [];
    const ctx = {
      store: {},
      sessions: {
        approve: (_sessionId: string, payload: ApprovePayload) => {
          sent.push(payload);
          return Promise.resolve({ callId: payload.callId, decision: payload.decision });
        },
      },
    } as unknown as CliContext;
    const controller = new ChatController(ctx, {} as DeltaChannel, 's1');
    const a = approvalKey('a');
    const y = approvalKey('y');
    if (a === null || y === null) throw new Error('no decision');
    await controller.decide('c1', a.decision, a.remember);
    await controller.decide('c1', y.decision, y.remember);
    expect(sent).toEqual([
      { callId: 'c1', decision: 'approve', by: 'chat', remember: 'tool' },
      { callId: 'c1', decision: 'approve', by: 'chat' },
    ]);
  });

  it('moves a claimed message from its queue to the transcript, saying where it entered', () => {
    const model = new ChatModel();
    model.apply(op(turnStart(1, 1)));
    model.apply(op(enqueue(2, 's1', 'next-step', true, 'keep it short')));
    model.apply(op(enqueue(3, 'f1', 'next-turn', true, 'then summarize')));
    model.apply(op(enqueue(4, 'i1', 'next-step', false, 'the build is green')));
    for (const o of claimed(5, 1, 2, [
      ['s1', 'steer', 'keep it short'],
      ['i1', 'inject', 'the build is green'],
    ]))
      model.apply(o);
    expect(model.waiting.map((w) => w.messageId)).toEqual(['f1']);
    expect(texts(model)).toEqual([
      '› you (steer, entered step 2): keep it short',
      '› you (inject, entered step 2): the build is green',
    ]);
    model.apply(op(event({ type: 'turn/end', at: T0, turn: 1, reason: 'completed' }, 9)));
    model.apply(op(turnStart(10, 2)));
    for (const o of claimed(11, 2, 1, [['f1', 'followup', 'then summarize']])) model.apply(o);
    expect(model.waiting).toEqual([]);
    expect(texts(model).at(-1)).toBe('› you (followup, turn 2): then summarize');
  });

  it('says a steer moved to the next turn by an interrupt entered there', () => {
    const model = new ChatModel();
    model.apply(op(turnStart(1, 1)));
    model.apply(op(enqueue(2, 's1', 'next-turn', true, 'the short version')));
    model.apply(op(event({ type: 'inbox/downgrade', at: T0, messageId: 's1', requested: 'next-step' }, 3)));
    model.apply(op(event({ type: 'turn/end', at: T0, turn: 1, reason: 'aborted' }, 4)));
    model.apply(op(turnStart(5, 2)));
    for (const o of claimed(6, 2, 1, [['s1', 'steer', 'the short version']])) model.apply(o);
    expect(texts(model).at(-1)).toBe('› you (steer, moved to the next turn, turn 2): the short version');
    expect(model.waiting).toEqual([]);
  });

  it('shows a message being sent until the log has it, then only the logged one; a failed send says so', () => {
    const model = new ChatModel();
    model.apply(op(turnStart(1, 1)));
    model.send('s1', 'steer', 'keep it\nshort');
    model.send('f1', 'followup', 'then summarize');
    expect(model.sending).toEqual([
      { messageId: 's1', fate: 'steer', text: 'keep it short' },
      { messageId: 'f1', fate: 'followup', text: 'then summarize' },
    ]);
    model.apply(op(enqueue(2, 's1', 'next-step', true, 'keep it\nshort')));
    // Replaced by the logged line, never both.
    expect(model.sending.map((s) => s.messageId)).toEqual(['f1']);
    expect(model.waiting.map((w) => w.messageId)).toEqual(['s1']);
    // The send's own return, after the log had it already, adds nothing.
    model.send('s1', 'steer', 'keep it\nshort');
    expect(model.sending.map((s) => s.messageId)).toEqual(['f1']);
    model.unsent('f1', 'the Temporal call timed out');
    expect(model.sending).toEqual([]);
    expect(texts(model)).toEqual(['✗ not sent (followup): "then summarize": the Temporal call timed out']);
    // A failure reported for a message the log has shown is not one.
    model.unsent('s1', 'late');
    expect(texts(model)).toHaveLength(1);
    for (const o of claimed(3, 1, 2, [['s1', 'steer', 'keep it\nshort']])) model.apply(o);
    expect(model.waiting).toEqual([]);
    expect(texts(model).filter((t) => t.includes('keep it'))).toEqual([
      '› you (steer, entered step 2): keep it\nshort',
    ]);
  });

  it('prints a line that came while the answer streamed after the answer, not above it', () => {
    const model = new ChatModel();
    model.apply(op(turnStart(1, 1)));
    model.apply({ type: 'text', turn: 1, step: 1, attempt: 1, text: 'Once upon a time' });
    model.note('⏹ interrupting the turn…', 'warn');
    model.apply(op(enqueue(2, 's1', 'next-turn', true, 'the short version')));
    model.apply(op(event({ type: 'inbox/downgrade', at: T0, messageId: 's1', requested: 'next-step' }, 3)));
    // On screen below the streaming text; nothing printed to the transcript above it.
    expect(texts(model)).toEqual([]);
    expect(model.live).toBe('Once upon a time');
    expect(model.trailing.map((l) => l.text)).toEqual([
      '⏹ interrupting the turn…',
      '↓ "the short version" came as the turn was being interrupted: it will start the next turn instead',
    ]);
    model.apply(answered(4, 1, 1, 'Once upon a time there', true));
    model.apply(op(event({ type: 'turn/end', at: T0, turn: 1, reason: 'aborted' }, 5)));
    expect(model.trailing).toEqual([]);
    expect(texts(model)).toEqual([
      'Once upon a time there',
      '⏹ interrupting the turn…',
      '↓ "the short version" came as the turn was being interrupted: it will start the next turn instead',
      '⏹ interrupted: the partial answer above is logged as interrupted',
      '■ turn 1 aborted',
    ]);
    // With nothing streaming, a note is printed at once.
    model.note('idle note');
    expect(texts(model).at(-1)).toBe('idle note');
    expect(model.trailing).toEqual([]);
  });

  it('prints what trailed a streamed answer that never got logged once the turn ends, or its attempt is retried', () => {
    const ended = new ChatModel();
    ended.apply(op(turnStart(1, 1)));
    ended.apply({ type: 'text', turn: 1, step: 1, attempt: 1, text: 'half' });
    ended.note('⏹ interrupting the turn…', 'warn');
    ended.apply(op(event({ type: 'turn/end', at: T0, turn: 1, reason: 'aborted' }, 2)));
    expect(texts(ended)).toEqual(['⏹ interrupting the turn…', '■ turn 1 aborted']);
    expect([ended.live, ended.trailing]).toEqual(['', []]);

    const retried = new ChatModel();
    retried.apply(op(turnStart(1, 1)));
    retried.apply({ type: 'text', turn: 1, step: 1, attempt: 1, text: 'first try' });
    retried.note('a note');
    retried.apply({ type: 'text', turn: 1, step: 1, attempt: 2, restart: true, text: '' });
    expect(texts(retried)).toEqual(['a note', '↻ the model call was retried (attempt 2); its answer starts over']);
    expect(retried.trailing).toEqual([]);
  });
});
