// The scripted provider's answers over real HTTP: streamed chunk shapes (text, reasoning, several
// fragmented tool calls), the usage chunk, non-streaming objects, /v1/models, and reply selection (and what
// its 500 says when a plugin's notice, such as the repeat guard's, is the last user message of a match script).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { toEvent } from '../../src/core/index.js';
import { deriveEventMessages } from '../../src/core/surface.js';
import { repeatGuardPlugin } from '../../src/plugins/repeat-guard-plugin.js';
import { canonicalInput, tokenCount } from '../../src/providers/canonical-tokens.js';
import {
  ChatCompletion,
  ChatCompletionChunk,
  ErrorBody,
  ModelList,
} from '../../src/scripted-provider/chat-completion-response.js';
import { CREATED_EPOCH_SECONDS } from '../../src/scripted-provider/render-reply.js';
import { post, readChunks, readData, useProvider, user } from './helpers.js';

const ask = (content: string, extra: Record<string, unknown> = {}) => ({
  model: 'deepseek-chat',
  stream: true,
  messages: [user(content)],
  ...extra,
});

describe('streaming chunk shapes', () => {
  it('streams text as role, content deltas of chunkSize, finish_reason, then [DONE]', async () => {
    const provider = await useProvider({ replies: [{ text: 'Hello there, scripted world!', chunkSize: 5 }] });
    const res = await post(provider, ask('hi'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const chunks = await readChunks(res);
    for (const chunk of chunks) ChatCompletionChunk.parse(chunk);
    expect(chunks.every((c) => c.id === 'chatcmpl-scripted-0' && c.created === CREATED_EPOCH_SECONDS)).toBe(true);
    expect(chunks.every((c) => c.model === 'deepseek-chat' && !('usage' in c))).toBe(true);
    expect(chunks[0]?.choices[0]).toEqual({
      index: 0,
      delta: { role: 'assistant', content: '' },
      logprobs: null,
      finish_reason: null,
    });
    const pieces = chunks.slice(1, -1).map((c) => c.choices[0]?.delta.content ?? '');
    expect(pieces.join('')).toBe('Hello there, scripted world!');
    expect(pieces.every((p) => p.length <= 5 && p.length > 0)).toBe(true);
    expect(pieces).toHaveLength(Math.ceil('Hello there, scripted world!'.length / 5));
    expect(chunks.at(-1)?.choices[0]).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' });
  });

  it('streams reasoning_content deltas before content deltas', async () => {
    const provider = await useProvider({
      replies: [{ reasoning: 'Think first, then speak.', text: 'Spoken.', chunkSize: 6 }],
    });
    const chunks = await readChunks(await post(provider, ask('why?', { model: 'deepseek-reasoner' })));
    expect(chunks[0]?.choices[0]?.delta).toEqual({ role: 'assistant', content: null, reasoning_content: '' });
    const deltas = chunks.slice(1, -1).map((c) => c.choices[0]!.delta);
    const firstContent = deltas.findIndex((d) => typeof d.content === 'string');
    const reasoning = deltas.slice(0, firstContent);
    expect(reasoning.every((d) => d.content === null && typeof d.reasoning_content === 'string')).toBe(true);
    expect(reasoning.map((d) => d.reasoning_content).join('')).toBe('Think first, then speak.');
    expect(
      deltas
        .slice(firstContent)
        .map((d) => d.content)
        .join(''),
    ).toBe('Spoken.');
    expect(deltas.slice(firstContent).every((d) => d.reasoning_content === undefined)).toBe(true);
  });

  it('streams several tool calls: id/type/name on the first fragment, argument fragments after', async () => {
    const calls = [
      { id: 'call_a', name: 'read_file', arguments: '{"path":"a.txt"}' },
      { id: 'call_b', name: 'list_dir', arguments: '{"path":".","depth":2}' },
      { id: 'call_c', name: 'noop', arguments: '{}' },
    ];
    const provider = await useProvider({ replies: [{ text: 'Checking.', toolCalls: calls, chunkSize: 4 }] });
    const chunks = await readChunks(await post(provider, ask('look')));
    for (const chunk of chunks) ChatCompletionChunk.parse(chunk);
    const toolDeltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    const indexes = toolDeltas.map((d) => d.index);
    expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
    for (const [index, call] of calls.entries()) {
      const fragments = toolDeltas.filter((d) => d.index === index);
      expect(fragments[0]).toEqual({
        index,
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: '' },
      });
      for (const fragment of fragments.slice(1)) {
        expect(Object.keys(fragment).sort()).toEqual(['function', 'index']);
        expect(Object.keys(fragment.function)).toEqual(['arguments']);
        expect(fragment.function.arguments!.length).toBeLessThanOrEqual(4);
      }
      expect(fragments.map((f) => f.function.arguments).join('')).toBe(call.arguments);
      expect(fragments.length).toBeGreaterThan(1);
    }
    // Content comes before the tool calls; each chunk carries one delta kind.
    const contentAt = chunks.findIndex((c) => c.choices[0]?.delta.content === 'Chec');
    const firstToolAt = chunks.findIndex((c) => c.choices[0]?.delta.tool_calls !== undefined);
    expect(contentAt).toBeGreaterThan(0);
    expect(firstToolAt).toBeGreaterThan(contentAt);
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('sends the usage chunk (empty choices) only with stream_options.include_usage, and usage: null on the others', async () => {
    const provider = await useProvider({
      cache: 'off',
      replies: [{ text: 'one', reasoning: 'hmm, let me see', repeat: 2 }],
    });
    const body = ask('count', { stream_options: { include_usage: true } });
    const withUsage = await readChunks(await post(provider, body));
    const usageChunk = withUsage.at(-1)!;
    expect(usageChunk.choices).toEqual([]);
    expect(withUsage.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(withUsage.at(-2)?.choices[0]?.finish_reason).toBe('stop');
    const reasoningTokens = tokenCount('hmm, let me see');
    expect(usageChunk.usage).toEqual({
      prompt_tokens: canonicalInput({ model: 'deepseek-chat', messages: [user('count')] }).tokens.length,
      completion_tokens: reasoningTokens + tokenCount('one'),
      total_tokens: usageChunk.usage!.prompt_tokens + reasoningTokens + tokenCount('one'),
      completion_tokens_details: { reasoning_tokens: reasoningTokens },
    });

    const without = await readChunks(await post(provider, ask('count')));
    expect(without.every((c) => c.choices.length === 1 && !('usage' in c))).toBe(true);
  });

  it('applies a usage override from the script', async () => {
    const provider = await useProvider({
      cache: 'deepseek',
      replies: [{ text: 'x', usage: { prompt_tokens: 9999, prompt_cache_hit_tokens: 4096 } }],
    });
    const chunks = await readChunks(await post(provider, ask('x', { stream_options: { include_usage: true } })));
    expect(chunks.at(-1)?.usage).toMatchObject({ prompt_tokens: 9999, prompt_cache_hit_tokens: 4096 });
  });
});

describe('non-streaming', () => {
  it('answers a chat.completion object with reasoning, content, tool calls and usage', async () => {
    const provider = await useProvider({
      replies: [
        {
          reasoning: 'Need the file.',
          text: 'Reading.',
          toolCalls: [{ id: 'call_1', name: 'read_file', arguments: { path: 'a.txt' } }],
        },
        { toolCalls: [{ id: 'call_2', name: 'noop', arguments: '{}' }] },
      ],
    });
    const res = await post(provider, { model: 'deepseek-chat', messages: [user('read a.txt')] });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = ChatCompletion.parse(await res.json());
    expect(body.id).toBe('chatcmpl-scripted-0');
    expect(body.choices).toEqual([
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'Reading.',
          refusal: null,
          reasoning_content: 'Need the file.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
          ],
        },
        logprobs: null,
        finish_reason: 'tool_calls',
      },
    ]);
    expect(body.usage?.prompt_cache_miss_tokens).toBe(body.usage?.prompt_tokens);

    const second = ChatCompletion.parse(
      await (await post(provider, { model: 'deepseek-chat', stream: false, messages: [user('again')] })).json(),
    );
    expect(second.id).toBe('chatcmpl-scripted-1');
    expect(second.created).toBe(CREATED_EPOCH_SECONDS + 1);
    expect(second.choices[0]?.message.content).toBeNull();
  });
});

describe('routes', () => {
  it('lists the script models on GET /v1/models', async () => {
    const provider = await useProvider({ models: ['deepseek-chat', 'gpt-4o-mini'], replies: [] });
    const res = await fetch(`${provider.url}/models`);
    expect(res.status).toBe(200);
    const list = ModelList.parse(await res.json());
    expect(list.data.map((m) => m.id)).toEqual(['deepseek-chat', 'gpt-4o-mini']);
  });

  it("reports a model's context window as vLLM's max_model_len when the script gives one", async () => {
    const provider = await useProvider({
      models: ['small', 'large'],
      contextWindows: { large: 32_768 },
      replies: [],
    });
    const list = ModelList.parse(await (await fetch(`${provider.url}/models`)).json());
    expect(list.data.map((m) => [m.id, m.max_model_len])).toEqual([
      ['small', undefined],
      ['large', 32_768],
    ]);
    expect('max_model_len' in (list.data[0] ?? {})).toBe(false);
  });

  it('refuses a script whose contextWindows names a model it does not list', async () => {
    await expect(useProvider({ models: ['small'], contextWindows: { large: 4096 }, replies: [] })).rejects.toThrow(
      /contextWindows.*"large" is not one of the script's models/,
    );
  });

  it('answers 404 for unknown paths and 405 for a GET on chat completions', async () => {
    const provider = await useProvider({ replies: [] });
    const notFound = await fetch(`${provider.url}/embeddings`, { method: 'POST', body: '{}' });
    expect(notFound.status).toBe(404);
    expect(ErrorBody.parse(await notFound.json()).error.code).toBe('unknown_url');
    const wrongMethod = await fetch(`${provider.url}/chat/completions`);
    expect(wrongMethod.status).toBe(405);
  });

  it('derives id and created from the request index, whatever the path', async () => {
    const provider = await useProvider({ replies: [{ text: 'ok' }] });
    await fetch(`${provider.url}/models`);
    await fetch(`${provider.url}/models`);
    const body = ChatCompletion.parse(
      await (await post(provider, { model: 'deepseek-chat', messages: [user('x')] })).json(),
    );
    expect(body.id).toBe('chatcmpl-scripted-2');
    expect(body.created).toBe(CREATED_EPOCH_SECONDS + 2);
  });
});

describe('reply selection', () => {
  const text = async (res: Response): Promise<string> => {
    const body = ChatCompletion.parse(await res.json());
    return body.choices[0]?.message.content ?? '';
  };
  const nonStream = (content: string) => ({ model: 'deepseek-chat', messages: [user(content)] });

  it('ordered mode: replies in order, repeat, then a 500 naming the exhausted script', async () => {
    const provider = await useProvider({
      replies: [{ text: 'first' }, { text: 'twice', repeat: 2 }, { text: 'last' }],
    });
    const answers: string[] = [];
    for (let i = 0; i < 4; i++) answers.push(await text(await post(provider, nonStream(`q${i}`))));
    expect(answers).toEqual(['first', 'twice', 'twice', 'last']);
    const exhausted = await post(provider, nonStream('more'));
    expect(exhausted.status).toBe(500);
    const error = ErrorBody.parse(await exhausted.json()).error;
    expect(error.code).toBe('script_exhausted');
    expect(error.message).toMatch(/script exhausted/);
    const streamed = await post(provider, { ...nonStream('more'), stream: true });
    expect(streamed.status).toBe(500);
    expect(provider.stats()).toMatchObject({ exhausted: 2, repliesUsed: 4, repliesRemaining: 0 });
  });

  it('match mode: the first unused reply whose match holds; a reply without match matches anything', async () => {
    const provider = await useProvider({
      mode: 'match',
      replies: [
        { match: { lastUserContains: 'weather' }, text: 'sunny' },
        { match: { lastUserContains: 'weather' }, text: 'rainy' },
        { match: { lastUserContains: 'time' }, text: 'noon' },
        { text: 'fallback' },
      ],
    });
    expect(await text(await post(provider, nonStream('what time is it?')))).toBe('noon');
    expect(await text(await post(provider, nonStream('the weather?')))).toBe('sunny');
    // The last *user* message decides, not the assistant/tool messages after it.
    const later = {
      model: 'deepseek-chat',
      messages: [user('and the weather now?'), { role: 'assistant', content: 'what time?' }],
    };
    expect(await text(await post(provider, later))).toBe('rainy');
    expect(await text(await post(provider, nonStream('the weather again?')))).toBe('fallback');
    const none = await post(provider, nonStream('the weather, once more?'));
    expect(none.status).toBe(500);
    expect(ErrorBody.parse(await none.json()).error.code).toBe('script_exhausted');
  });
});

describe("a plugin's notice as the last user message", () => {
  /** The repeat guard's notice after step 2 repeats step 1's call, as the request carries it (injected context). */
  async function repeatGuardNotice(): Promise<string> {
    const answer = (step: number) =>
      toEvent(
        {
          type: 'assistant/message',
          at: 1,
          turn: 1,
          step,
          content: null,
          toolCalls: [{ id: `c${step}`, name: 'read_file', arguments: '{"path":"a.txt"}' }],
          finishReason: 'tool_calls',
        },
        step,
      );
    const notices = await repeatGuardPlugin().afterTools?.({
      sessionId: 's',
      turn: 1,
      step: 2,
      events: [answer(1), answer(2)],
    });
    const content = notices?.[0]?.content ?? '';
    const event = { type: 'user/message', at: 1, turn: 1, step: 2, messageId: 'n', origin: 'inject' } as const;
    const [message] = deriveEventMessages(toEvent({ ...event, source: 'repeat-guard', content }, 3));
    if (typeof message?.content !== 'string') throw new Error('the notice is not a text message');
    return message.content;
  }

  it("match mode: the 500 says the last user message is a plugin's notice, and how to match it", async () => {
    const notice = await repeatGuardNotice();
    const request = { model: 'deepseek-chat', messages: [user('please read a.txt'), user(notice)] };
    const task = await useProvider({
      mode: 'match',
      replies: [{ match: { lastUserContains: 'read a.txt' }, text: 'never played' }],
    });
    const refused = await post(task, request);
    expect(refused.status).toBe(500);
    const error = ErrorBody.parse(await refused.json()).error;
    expect(error.code).toBe('script_exhausted');
    expect(error.message).toContain('the last user message is injected context from "repeat-guard"');
    expect(error.message).toContain(`lastUserContains: 'source="repeat-guard"'`);
    // A request the user wrote is quoted instead.
    const other = ErrorBody.parse(await (await post(task, { ...request, messages: [user('hello there')] })).json());
    expect(other.error.message).toMatch(/; the last user message is "hello there"$/);

    // Matching the notice, as the page says, answers it; and the page shows the notice as the guard writes it.
    const matched = await useProvider({
      mode: 'match',
      replies: [{ match: { lastUserContains: 'source="repeat-guard"' }, text: 'I will stop repeating' }],
    });
    const answered = ChatCompletion.parse(await (await post(matched, request)).json());
    expect(answered.choices[0]?.message.content).toBe('I will stop repeating');
    expect(readFileSync(new URL('../../docs/scripted-provider.md', import.meta.url), 'utf8')).toContain(notice);
  });
});

describe('SSE framing', () => {
  it('frames every event as `data: {json}` and ends with `data: [DONE]`', async () => {
    const provider = await useProvider({ replies: [{ text: 'héllo 👋 wörld', chunkSize: 3 }] });
    const data = await readData(await post(provider, ask('hi')));
    expect(data.at(-1)).toBe('[DONE]');
    const text = data
      .slice(0, -1)
      .map((d) => (JSON.parse(d) as ChatCompletionChunk).choices[0]?.delta.content ?? '')
      .join('');
    expect(text).toBe('héllo 👋 wörld');
  });
});
