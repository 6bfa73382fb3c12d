// The scripted provider's answers carry every field the `openai` package's response types require
// (issue 14, smaller defects: the non-streaming `message` had no `refusal`, which
// `ChatCompletionMessage` types as `refusal: string | null`). The required-key lists below are tied
// to the package's types at typecheck time, so a field the package starts to require shows up here.
import OpenAI from 'openai';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { ChatCompletion } from '../../src/scripted-provider/chat-completion-response.js';
import { useProvider, user } from './helpers.js';

/** The keys of `T` that are not optional. */
type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];

const COMPLETION_KEYS = ['id', 'object', 'created', 'model', 'choices'] as const;
const CHOICE_KEYS = ['index', 'message', 'logprobs', 'finish_reason'] as const;
const MESSAGE_KEYS = ['role', 'content', 'refusal'] as const;
const TOOL_CALL_KEYS = ['id', 'type', 'function'] as const;
const USAGE_KEYS = ['prompt_tokens', 'completion_tokens', 'total_tokens'] as const;
const CHUNK_KEYS = ['id', 'object', 'created', 'model', 'choices'] as const;
const CHUNK_CHOICE_KEYS = ['index', 'delta', 'finish_reason'] as const;

type Keys<T extends readonly string[]> = T[number];

describe('the lists match the openai package types', () => {
  it('names exactly the required keys (checked by tsc)', () => {
    expectTypeOf<Keys<typeof COMPLETION_KEYS>>().toEqualTypeOf<RequiredKeys<OpenAI.ChatCompletion>>();
    expectTypeOf<Keys<typeof CHOICE_KEYS>>().toEqualTypeOf<RequiredKeys<OpenAI.ChatCompletion.Choice>>();
    expectTypeOf<Keys<typeof MESSAGE_KEYS>>().toEqualTypeOf<RequiredKeys<OpenAI.ChatCompletionMessage>>();
    expectTypeOf<Keys<typeof TOOL_CALL_KEYS>>().toEqualTypeOf<
      RequiredKeys<OpenAI.ChatCompletionMessageFunctionToolCall>
    >();
    expectTypeOf<Keys<typeof USAGE_KEYS>>().toEqualTypeOf<RequiredKeys<OpenAI.CompletionUsage>>();
    expectTypeOf<Keys<typeof CHUNK_KEYS>>().toEqualTypeOf<RequiredKeys<OpenAI.ChatCompletionChunk>>();
    expectTypeOf<Keys<typeof CHUNK_CHOICE_KEYS>>().toEqualTypeOf<RequiredKeys<OpenAI.ChatCompletionChunk.Choice>>();
  });
});

function expectKeys(value: unknown, keys: readonly string[]): void {
  expect(value).toBeTypeOf('object');
  for (const key of keys) expect(value, `missing required field "${key}"`).toHaveProperty([key]);
}

describe('answers read through the openai client', () => {
  const script = {
    replies: [
      { text: 'Hello.' },
      { reasoning: 'Need it.', toolCalls: [{ id: 'call_1', name: 'read_file', arguments: { path: 'a.txt' } }] },
      { text: 'Streamed.' },
    ],
  };

  it('a non-streaming completion has every required field, refusal and logprobs null', async () => {
    const provider = await useProvider(script);
    const client = new OpenAI({ baseURL: provider.url, apiKey: 'sk-test-key', maxRetries: 0 });
    const create = (content: string) =>
      client.chat.completions.create({ model: 'deepseek-chat', stream: false, messages: [user(content)] });

    for (const completion of [await create('hi'), await create('read a.txt')]) {
      ChatCompletion.parse(completion);
      expectKeys(completion, COMPLETION_KEYS);
      expectKeys(completion.usage, USAGE_KEYS);
      expect(completion.choices).toHaveLength(1);
      const choice = completion.choices[0]!;
      expectKeys(choice, CHOICE_KEYS);
      expect(choice.logprobs).toBeNull();
      expectKeys(choice.message, MESSAGE_KEYS);
      expect(choice.message.refusal).toBeNull();
      for (const call of choice.message.tool_calls ?? []) expectKeys(call, TOOL_CALL_KEYS);
    }
  });

  it('a streamed completion has every required field in every chunk', async () => {
    const provider = await useProvider({ replies: [script.replies[2]!] });
    const client = new OpenAI({ baseURL: provider.url, apiKey: 'sk-test-key', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'deepseek-chat',
      stream: true,
      stream_options: { include_usage: true },
      messages: [user('stream it')],
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      expectKeys(chunk, CHUNK_KEYS);
      for (const choice of chunk.choices) {
        expectKeys(choice, CHUNK_CHOICE_KEYS);
        text += choice.delta.content ?? '';
      }
      usage ??= chunk.usage;
    }
    expect(text).toBe('Streamed.');
    expectKeys(usage, USAGE_KEYS);
  });
});
