// The pure part of subagents: the delegate arguments, a child's id, a child's header, what a child spent
// and the result its parent logs, and the log fields that carry the links.
import { describe, expect, it } from 'vitest';
import {
  childSessionIdFor,
  delegatedHeader,
  delegationResult,
  ErrorCode,
  parseDelegateArguments,
  Session,
  SESSION_FORMAT_VERSION,
  sessionSpend,
  type RequestHeader,
  type SessionEvent,
} from '../../src/core/index.js';
import { SessionId } from '../../src/shared/session-messages.js';

const usage = (n: number) => ({ inputUncached: n, cacheRead: 0, output: 1, reasoning: 0 });

/** A child's log: its start, its task, one turn with a step per answer, and the given end (none: still open). */
function childLog(reason: 'completed' | 'aborted' | null, answers: (string | null)[]): SessionEvent[] {
  const s = new Session('c');
  s.append({
    type: 'session/start',
    at: 1,
    sessionId: 'c',
    formatVersion: SESSION_FORMAT_VERSION,
    delegation: { parentSessionId: 'p', callId: 'd1', depth: 1, workspaceSessionId: 'p', tools: ['echo'] },
  });
  s.append({
    type: 'inbox/enqueue',
    at: 1,
    messageId: 'delegated-task',
    target: 'next-turn',
    wakeup: true,
    origin: 'followup',
    source: 'delegate:p',
    content: 'do it',
  });
  s.append({ type: 'turn/start', at: 2, turn: 1 });
  s.append({ type: 'inbox/claim', at: 2, turn: 1, step: 1, messageIds: ['delegated-task'] });
  for (const [i, content] of answers.entries()) {
    const step = i + 1;
    s.append({ type: 'step/start', at: 3, turn: 1, step });
    if (step === 1) {
      s.append({
        type: 'request/header',
        at: 3,
        turn: 1,
        step: 1,
        reason: 'initial',
        header: { config: { provider: 'x', model: 'm' } },
      });
    }
    s.append({ type: 'request/sent', at: 3, turn: 1, step, digest: `sha256:${'0'.repeat(64)}`, bytes: 1 });
    s.append({
      type: 'assistant/message',
      at: 4,
      turn: 1,
      step,
      content,
      toolCalls: [],
      finishReason: 'stop',
      usage: usage(10),
    });
    s.append({ type: 'step/end', at: 4, turn: 1, step });
  }
  if (reason) s.append({ type: 'turn/end', at: 5, turn: 1, reason });
  return [...s.events];
}

describe('delegation, the pure part', () => {
  it('parses the arguments and says what is wrong with bad ones', () => {
    expect(parseDelegateArguments('{"task":"  x  ","tools":["echo"],"max_steps":3}')).toEqual({
      ok: true,
      value: { task: 'x', tools: ['echo'], max_steps: 3 },
    });
    expect(parseDelegateArguments('not json')).toEqual({ ok: false, error: 'delegate: the arguments are not JSON' });
    expect(parseDelegateArguments('{"task":" "}')).toMatchObject({ error: 'delegate: task: task must say what to do' });
    expect(parseDelegateArguments('{"task":"x","extra":1}')).toMatchObject({ ok: false });
    expect(parseDelegateArguments('{"task":"x","max_steps":0}')).toMatchObject({
      error: expect.stringContaining('max_steps') as string,
    });
  });

  it("names a child from the parent's log alone, always a valid session id, hashed when too long", () => {
    expect(childSessionIdFor('p', 3, 2, 1)).toBe('p.d3-2-1');
    const long = 'x'.repeat(118);
    const a = childSessionIdFor(long, 1, 1, 0);
    const b = childSessionIdFor(long, 1, 1, 1);
    expect(a).not.toBe(b);
    expect(a).toBe(childSessionIdFor(long, 1, 1, 0));
    for (const id of [a, b, childSessionIdFor(a, 9, 9, 9)]) expect(SessionId.safeParse(id).success).toBe(true);
  });

  it('gives a child only its tools and its model, and no delegate tool at the depth limit', () => {
    const tool = (name: string) => ({ name, description: '', parameters: {} });
    const header: RequestHeader = {
      config: { provider: 'x', model: 'big' },
      tools: [tool('echo'), tool('grep'), tool('delegate')],
    };
    expect(delegatedHeader(header, undefined, 1)).toBe(header);
    const link = { parentSessionId: 'p', callId: 'd', depth: 1, workspaceSessionId: 'p' };
    expect(delegatedHeader(header, link, 1).tools?.map((t) => t.name)).toEqual(['echo', 'grep']);
    expect(delegatedHeader(header, link, 2).tools?.map((t) => t.name)).toEqual(['echo', 'grep', 'delegate']);
    const narrowed = delegatedHeader(header, { ...link, tools: ['grep'], model: 'small' }, 2);
    expect(narrowed).toEqual({ config: { provider: 'x', model: 'small' }, tools: [tool('grep')] });
    expect(delegatedHeader(header, { ...link, tools: ['delegate'] }, 1).tools).toBeUndefined();
  });

  it("reports a finished child's last answer and what it spent, its own children included", () => {
    const log = childLog('completed', [null, 'all done']);
    const result = delegationResult('c', log);
    expect(result).toMatchObject({ status: 'ok', child: { sessionId: 'c', reason: 'completed' } });
    expect(result.output).toBe('Subagent c finished (2 model steps, 22 tokens).\n\nall done');
    const withGrandchild: SessionEvent[] = [
      ...log,
      {
        seq: log.length,
        at: 9,
        key: 'k',
        type: 'tool/result',
        turn: 1,
        step: 1,
        callId: 'g',
        name: 'delegate',
        output: '',
        status: 'ok',
        child: { sessionId: 'g', reason: 'completed', usage: usage(100) },
      },
    ];
    expect(sessionSpend(withGrandchild)).toEqual({ inputUncached: 120, cacheRead: 0, output: 3, reasoning: 0 });
  });

  it('reports an interrupted child, and one that never finished, with why', () => {
    const aborted = delegationResult('c', childLog('aborted', ['half an ans']));
    expect(aborted.status).toBe('interrupted');
    expect(aborted.output).toBe(
      'Subagent c stopped: its turn ended "aborted" (1 model step, 11 tokens).\n\nIts last answer:\nhalf an ans',
    );
    const unfinished = delegationResult('c', childLog(null, []), 'terminated');
    expect(unfinished).toMatchObject({ status: 'error', child: { reason: 'unfinished' } });
    expect(unfinished.output).toContain('ended without finishing its task (0 model steps, 0 tokens): terminated.');
    expect(delegationResult('gone', [], 'a session with its id already ran').output).toContain('It gave no answer.');
  });

  it('the link fields load back, and a bad one is refused like any field', () => {
    const log = childLog('completed', ['x']);
    expect(new Session('c', log).events[0]).toMatchObject({ delegation: { callId: 'd1', tools: ['echo'] } });
    const bad = new Session('c');
    let error: unknown;
    try {
      bad.append({
        type: 'session/start',
        at: 1,
        sessionId: 'c',
        formatVersion: SESSION_FORMAT_VERSION,
        delegation: { parentSessionId: 'p', callId: 'd1', depth: 0, workspaceSessionId: 'p' },
      });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: ErrorCode.InvalidEvent });
    expect((error as Error).message).toMatch(/delegation\.depth/);
  });
});
