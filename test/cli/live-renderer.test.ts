// How `dh run` / `dh attach` render a running tool call's progress: one plain note line per update on
// stderr between the call's `→` and `←` lines, `… <tool> <progress>[/<total>] [message]`; nothing on
// stdout, no cursor codes without a TTY; a note arriving mid-answer never splits a piped stdout; and the
// tool policy: an approval by its short id with the command that decides it, a deny, a remembered rule.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { approvalShortId, toEvent, type EventDraft, type EventOf } from '../../src/core/index.js';
import { LiveRenderer } from '../../src/cli/live/live-renderer.js';
import type { FollowOp } from '../../src/streaming/session-follower.js';

function sink(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}

const progress = (progress: number, total: number | null, message: string | null): FollowOp => ({
  type: 'tool-progress',
  turn: 1,
  step: 1,
  callId: 'c1',
  name: 'count_up',
  progress,
  total,
  message,
});

const answer = toEvent(
  {
    type: 'assistant/message',
    at: 1,
    turn: 1,
    step: 1,
    content: null,
    toolCalls: [{ id: 'c1', name: 'count_up', arguments: '{"to":3}' }],
    finishReason: 'tool_calls',
  },
  6,
) as EventOf<'assistant/message'>;

describe('LiveRenderer: tool progress', () => {
  it('prints one plain line per update between the call and its result (no TTY)', () => {
    const out = sink();
    const err = sink();
    const renderer = new LiveRenderer({ sessionId: 's', out: out.stream, err: err.stream, tty: false });
    renderer.op({ type: 'answer', event: answer, rest: '', replaced: false, streamed: false });
    renderer.op({
      type: 'event',
      event: toEvent({ type: 'tool/start', at: 2, turn: 1, step: 1, callId: 'c1', name: 'count_up' }, 7),
    });
    renderer.op(progress(1, 3, 'first   part\nof it'));
    renderer.op(progress(2, null, null));
    renderer.op(progress(0.333333, 1, 'x'.repeat(150)));
    renderer.op({
      type: 'event',
      event: toEvent(
        { type: 'tool/result', at: 3, turn: 1, step: 1, callId: 'c1', name: 'count_up', output: 'done', status: 'ok' },
        8,
      ),
    });
    renderer.close();
    expect(out.text()).toBe('');
    expect(err.text().split('\n')).toEqual([
      '→ count_up {"to":3}',
      '… count_up 1/3 first part of it',
      '… count_up 2',
      `… count_up 0.33/1 ${'x'.repeat(99)}…`,
      '← count_up ok: done (4 chars)',
      '',
    ]);
  });

  it('on a TTY the line is a dimmed note like the other tool lines, and the spinner says how far', () => {
    const err = sink();
    const renderer = new LiveRenderer({ sessionId: 's', out: sink().stream, err: err.stream, tty: true });
    renderer.op(progress(2, 5, 'two'));
    renderer.close();
    expect(err.text()).toContain('\x1b[2m… count_up 2/5 two\x1b[0m\n');
    expect(err.text()).toContain('running count_up 2/5…');
  });
});

describe('LiveRenderer: a note while the answer streams', () => {
  const text = (t: string): FollowOp => ({ type: 'text', turn: 1, step: 1, attempt: 1, text: t });

  it('leaves a piped stdout holding exactly the answer', () => {
    const out = sink();
    const err = sink();
    const renderer = new LiveRenderer({ sessionId: 's', out: out.stream, err: err.stream, tty: false });
    renderer.op(text('done, on'));
    renderer.note('dh: a worker now polls task queue "q"; session s goes on');
    renderer.op(text('ce a worker came'));
    renderer.close();
    expect(out.text()).toBe('done, once a worker came\n');
    expect(err.text()).toBe('dh: a worker now polls task queue "q"; session s goes on\n');
  });

  it('on a terminal stdout, ends the answer line first so the note gets a line of its own', () => {
    const out = sink();
    Object.assign(out.stream, { isTTY: true });
    const renderer = new LiveRenderer({ sessionId: 's', out: out.stream, err: sink().stream, tty: false });
    renderer.op(text('half'));
    renderer.note('a note');
    expect(out.text()).toBe('half\n');
  });
});

describe('LiveRenderer: the tool policy', () => {
  const render = (...drafts: EventDraft[]): string => {
    const err = sink();
    const renderer = new LiveRenderer({ sessionId: 's1', out: sink().stream, err: err.stream, tty: false });
    drafts.forEach((draft, i) => renderer.op({ type: 'event', event: toEvent(draft, 10 + i) }));
    renderer.close();
    return err.text();
  };
  const verdict = {
    type: 'policy/verdict',
    at: 1,
    turn: 1,
    step: 1,
    callId: 'call_0123456789abcdef',
    name: 'shell',
    version: 'v1',
    inputs: 'sha256:00',
  } as const;

  it('names a waiting call by its short id, in the command that decides it', () => {
    const callId = 'call_0123456789abcdef';
    const shortId = approvalShortId(callId);
    expect(shortId).toMatch(/^[0-9a-f]{5}$/);
    const text = render({ type: 'approval/request', at: 1, turn: 1, step: 1, callId, name: 'shell', reason: 'asks' });
    expect(text).toBe(
      `⏸ shell needs approval [${shortId}]: asks\n  dh approve s1 ${shortId}   · --deny · --remember tool\n`,
    );
    expect(text).not.toContain(callId);
  });

  it('notes a deny with what decided it; an allow or an ask adds nothing', () => {
    expect(render({ ...verdict, outcome: 'deny', by: 'rule', rule: 'no-rm', reason: 'rm is\nnot allowed' })).toBe(
      '✗ policy denied shell (rule no-rm): rm is not allowed\n',
    );
    expect(render({ ...verdict, outcome: 'deny', by: 'evaluator', evaluator: 'risk' })).toBe(
      '✗ policy denied shell (evaluator risk)\n',
    );
    expect(render({ ...verdict, outcome: 'allow', by: 'rule', rule: 'reads' })).toBe('');
    expect(render({ ...verdict, outcome: 'ask', by: 'default' })).toBe('');
  });

  it('notes a rule remembered for the session, for the tool or for these arguments', () => {
    const rule = { type: 'policy/rule', at: 1, turn: 1, step: 1, callId: 'c1' } as const;
    expect(
      render(
        { ...rule, rule: { id: 'session:c1', tool: 'shell', outcome: 'allow' } },
        { ...rule, rule: { id: 'session:c2', tool: 'shell', when: [{ arg: '', equals: { a: 1 } }], outcome: 'deny' } },
      ),
    ).toBe('remembered for this session: allow shell\nremembered for this session: deny shell (these arguments)\n');
  });
});
