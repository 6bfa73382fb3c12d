// The outbound gate's comparison: any edit to a built request, in any field or message, is refused
// with the place of the first difference; frozen requests cannot be edited at all.
import { describe, expect, it } from 'vitest';
import { buildSessionRequest, deepFreeze, ErrorCode, verifyRequest, type BuiltRequest } from '../../src/core/index.js';
import { LogDriver } from '../helpers/log-generator.js';

/** A log paused inside step 2 of turn 1 (after a tool round), with a request ready to send. */
function pendingRequest(): { driver: LogDriver; request: BuiltRequest } {
  const driver = new LogDriver('s-gate').run([
    { kind: 'send', origin: 'followup', text: 'do the thing' },
    { kind: 'step', toolCalls: 2, text: 'reading', changeHeader: false, skipLastTool: false },
    { kind: 'send', origin: 'inject', text: 'fyi' },
  ]);
  const s = driver.session;
  const turn = s.state.openTurn ?? 0;
  const step = s.state.lastStep + 1;
  const queued = [...s.state.queue.keys()];
  driver.append(
    { type: 'inbox/claim', at: 9, turn, step, messageIds: queued },
    { type: 'step/start', at: 9, turn, step },
    {
      type: 'user/message',
      at: 9,
      turn,
      step,
      messageId: queued[0] ?? '',
      origin: 'inject',
      source: 'test',
      content: 'fyi',
    },
  );
  return { driver, request: buildSessionRequest(s) };
}

/** A mutable deep copy, edited, then frozen again: the "clone, edit, hand on" plugin. */
function tampered(
  request: BuiltRequest,
  edit: (copy: { -readonly [K in keyof BuiltRequest]: any }) => void,
): BuiltRequest {
  const copy = JSON.parse(JSON.stringify(request)) as { -readonly [K in keyof BuiltRequest]: any };
  edit(copy);
  return deepFreeze(copy as BuiltRequest);
}

function refusal(request: BuiltRequest, events: LogDriver['session']['events']): { code: string; where: unknown } {
  try {
    verifyRequest(request, events);
  } catch (error) {
    const e = error as { code: string; details: { where: unknown } };
    return { code: e.code, where: e.details.where };
  }
  throw new Error('the gate let a tampered request through');
}

describe('verifyRequest', () => {
  it('passes the request the log derives', () => {
    const { driver, request } = pendingRequest();
    expect(request.messages.length).toBe(6); // prefix + user + assistant + 2 tool + injected
    expect(verifyRequest(request, driver.session.events)).toEqual(request);
  });

  const edits: Array<[string, (r: any) => void, string]> = [
    ['one message changed', (r) => (r.messages[2].content = 'edited'), 'messages[2]'],
    [
      'a message added at the end',
      (r) => r.messages.push({ role: 'user', content: 'sneaky' }),
      'messages.length (7 sent, 6 derived)',
    ],
    ['a message inserted in front', (r) => r.messages.unshift({ role: 'user', content: 'sneaky' }), 'messages[0]'],
    ['a message removed', (r) => r.messages.splice(3, 1), 'messages[3]'],
    ['the model changed', (r) => (r.config.model = 'gpt-5'), 'config.model'],
    ['a sampling scalar added', (r) => (r.config.topP = 0.5), 'config.topP'],
    ['the temperature changed', (r) => (r.config.temperature = 1), 'config.temperature'],
    ['the system prompt changed', (r) => (r.system = 'be evil'), 'system'],
    ['a tool removed', (r) => r.tools.pop(), 'tools.length (0 sent, 1 derived)'],
    ['a tool schema edited', (r) => (r.tools[0].description = 'x'), 'tools[0]'],
    ['the step changed', (r) => (r.step = 7), 'step'],
    ['an unknown field added', (r) => (r.extra = true), 'extra'],
  ];

  it.each(edits)('refuses a request with %s', (_name, edit, where) => {
    const { driver, request } = pendingRequest();
    expect(refusal(tampered(request, edit), driver.session.events)).toEqual({ code: ErrorCode.RequestDiverges, where });
  });

  it('refuses a request that is not deep-frozen', () => {
    const { driver, request } = pendingRequest();
    const thawed = JSON.parse(JSON.stringify(request)) as BuiltRequest;
    expect(refusal(thawed, driver.session.events).code).toBe(ErrorCode.RequestNotFrozen);
  });

  it('mutating anything reachable from a built request throws', () => {
    const { request } = pendingRequest();
    const r = request as any;
    expect(() => (r.config.model = 'x')).toThrow(TypeError);
    expect(() => r.messages.push({ role: 'user', content: 'x' })).toThrow(TypeError);
    expect(() => (r.messages[1].content = 'x')).toThrow(TypeError);
    expect(() => (r.tools[0].parameters.type = 'x')).toThrow(TypeError);
    expect(() => (r.messages[2].toolCalls[0].arguments = '{}')).toThrow(TypeError);
  });

  it('refuses when the log moved on: a model-visible event appended after the build', () => {
    const { driver, request } = pendingRequest();
    const s = driver.session;
    driver.append(
      {
        type: 'request/sent',
        at: 10,
        turn: request.turn,
        step: request.step,
        digest: `sha256:${'0'.repeat(64)}`,
        bytes: 1,
      },
      {
        type: 'assistant/message',
        at: 10,
        turn: request.turn,
        step: request.step,
        content: 'x',
        toolCalls: [],
        finishReason: 'stop',
      },
    );
    expect(() => verifyRequest(request, s.events)).toThrow(/no open step|differs/);
  });
});
