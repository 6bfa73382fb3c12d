// Validation over real HTTP: each rejection a real provider makes, with its status and error body;
// rejected requests consume no reply.
import { describe, expect, it } from 'vitest';
import { ChatCompletion, ErrorBody } from '../../src/scripted-provider/chat-completion-response.js';
import { post, useProvider, user } from './helpers.js';

const call = (id: string, name = 'read_file') => ({ id, type: 'function', function: { name, arguments: '{}' } });
const assistantCalls = (ids: string[], extra: Record<string, unknown> = {}) => ({
  role: 'assistant',
  content: null,
  tool_calls: ids.map((id) => call(id)),
  ...extra,
});
const toolAnswer = (id: string) => ({ role: 'tool', tool_call_id: id, content: 'result' });

async function expectError(res: Response, status: number, code: string): Promise<string> {
  expect(res.status).toBe(status);
  const body = ErrorBody.parse(await res.json());
  expect(body.error.code).toBe(code);
  return body.error.message;
}

describe('request validation', () => {
  it('rejects a malformed JSON body and a body that is not an object', async () => {
    const provider = await useProvider({ replies: [] });
    await expectError(await post(provider, '{"model": "deepseek-chat", "messages": ['), 400, 'invalid_json');
    await expectError(await post(provider, '[1,2,3]'), 400, 'invalid_request_body');
    const bad = new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]);
    const res = await fetch(`${provider.url}/chat/completions`, { method: 'POST', body: bad });
    await expectError(res, 400, 'invalid_encoding');
  });

  it('rejects missing and empty messages', async () => {
    const provider = await useProvider({ replies: [] });
    await expectError(await post(provider, { model: 'deepseek-chat' }), 400, 'missing_messages');
    await expectError(await post(provider, { model: 'deepseek-chat', messages: [] }), 400, 'missing_messages');
    await expectError(await post(provider, { messages: [user('x')] }), 400, 'missing_model');
  });

  it('answers 404 model_not_found for a model the script does not know', async () => {
    const provider = await useProvider({ models: ['deepseek-chat'], replies: [] });
    const message = await expectError(
      await post(provider, { model: 'deepseek-reasoner', messages: [user('x')] }),
      404,
      'model_not_found',
    );
    expect(message).toContain('deepseek-reasoner');
  });

  it('rejects a message of the wrong shape, naming its path', async () => {
    const provider = await useProvider({ replies: [] });
    const message = await expectError(
      await post(provider, { model: 'deepseek-chat', messages: [user('x'), { role: 'wizard', content: 'y' }] }),
      400,
      'invalid_request_body',
    );
    expect(message).toContain('$.messages[1].role');
  });

  it('rejects tool calls not immediately answered by tool messages for every call id', async () => {
    const provider = await useProvider({ replies: [] });
    const interrupted = [user('x'), assistantCalls(['call_1']), user('never mind')];
    const m1 = await expectError(
      await post(provider, { model: 'deepseek-chat', messages: interrupted }),
      400,
      'tool_calls_unanswered',
    );
    expect(m1).toContain('call_1');
    const partial = [user('x'), assistantCalls(['call_1', 'call_2']), toolAnswer('call_2'), user('go on')];
    const m2 = await expectError(
      await post(provider, { model: 'deepseek-chat', messages: partial }),
      400,
      'tool_calls_unanswered',
    );
    expect(m2).toContain('call_1');
    expect(m2).not.toContain('call_2');
    const trailing = [user('x'), assistantCalls(['call_1'])];
    await expectError(
      await post(provider, { model: 'deepseek-chat', messages: trailing }),
      400,
      'tool_calls_unanswered',
    );
  });

  it('rejects a tool message that answers no pending call', async () => {
    const provider = await useProvider({ replies: [] });
    const orphan = [user('x'), toolAnswer('call_1')];
    await expectError(await post(provider, { model: 'deepseek-chat', messages: orphan }), 400, 'invalid_tool_message');
    const wrongId = [user('x'), assistantCalls(['call_1']), toolAnswer('call_9')];
    await expectError(await post(provider, { model: 'deepseek-chat', messages: wrongId }), 400, 'invalid_tool_message');
    const twice = [user('x'), assistantCalls(['call_1']), toolAnswer('call_1'), toolAnswer('call_1')];
    await expectError(await post(provider, { model: 'deepseek-chat', messages: twice }), 400, 'invalid_tool_message');
    const late = [user('x'), assistantCalls(['call_1']), toolAnswer('call_1'), user('y'), toolAnswer('call_1')];
    await expectError(await post(provider, { model: 'deepseek-chat', messages: late }), 400, 'invalid_tool_message');
  });

  it('accepts properly paired tool calls, answered in any order', async () => {
    const provider = await useProvider({ replies: [{ text: 'done' }] });
    const messages = [user('x'), assistantCalls(['a', 'b']), toolAnswer('b'), toolAnswer('a')];
    const res = await post(provider, { model: 'deepseek-chat', messages });
    expect(res.status).toBe(200);
  });
});

describe('DeepSeek thinking mode: reasoning_content pass-back', () => {
  const turn = (reasoning: boolean) =>
    assistantCalls(['call_1'], reasoning ? { reasoning_content: 'I should read it.' } : {});
  const current = (reasoning: boolean) => [user('read a.txt'), turn(reasoning), toolAnswer('call_1')];
  const earlier = [
    user('read a.txt'),
    turn(false),
    toolAnswer('call_1'),
    { role: 'assistant', content: 'ok' },
    user('thanks'),
  ];

  it('rejects deepseek-reasoner history whose tool-calling assistant message after the last user message lacks it', async () => {
    const provider = await useProvider({ replies: [{ text: 'fine' }] });
    const message = await expectError(
      await post(provider, { model: 'deepseek-reasoner', messages: current(false) }),
      400,
      'missing_reasoning_content',
    );
    expect(message).toContain('message index 1');
    expect(message).toContain('https://api-docs.deepseek.com/guides/thinking_mode');
    const ok = await post(provider, { model: 'deepseek-reasoner', messages: current(true) });
    expect(ok.status).toBe(200);
    expect(ChatCompletion.parse(await ok.json()).choices[0]?.message.content).toBe('fine');
  });

  it('applies to deepseek-chat with thinking enabled, not to deepseek-chat without it', async () => {
    const provider = await useProvider({ replies: [{ text: 'fine' }] });
    await expectError(
      await post(provider, { model: 'deepseek-chat', thinking: { type: 'enabled' }, messages: current(false) }),
      400,
      'missing_reasoning_content',
    );
    expect((await post(provider, { model: 'deepseek-chat', messages: current(false) })).status).toBe(200);
  });

  it('current-turn (default) ignores earlier turns; all-turns requires it everywhere', async () => {
    const lenient = await useProvider({ replies: [{ text: 'ok' }] });
    expect((await post(lenient, { model: 'deepseek-reasoner', messages: earlier })).status).toBe(200);
    const strict = await useProvider({ reasoningPassBack: 'all-turns', replies: [{ text: 'ok' }] });
    await expectError(
      await post(strict, { model: 'deepseek-reasoner', messages: earlier }),
      400,
      'missing_reasoning_content',
    );
  });

  it('accepts an empty reasoning_content string as passed back', async () => {
    const provider = await useProvider({ replies: [{ text: 'ok' }] });
    const messages = [user('x'), assistantCalls(['call_1'], { reasoning_content: '' }), toolAnswer('call_1')];
    expect((await post(provider, { model: 'deepseek-reasoner', messages })).status).toBe(200);
  });
});

describe('rejections and the script', () => {
  it('consume no reply and are counted', async () => {
    const provider = await useProvider({ replies: [{ text: 'first' }] });
    await post(provider, 'nope');
    await post(provider, { model: 'other', messages: [user('x')] });
    const res = await post(provider, { model: 'deepseek-chat', messages: [user('x')] });
    expect(ChatCompletion.parse(await res.json()).choices[0]?.message.content).toBe('first');
    expect(provider.stats()).toMatchObject({ requests: 3, rejected: 2, repliesUsed: 1 });
  });
});
