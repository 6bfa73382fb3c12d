// The wire body: golden bytes, field spelling, the DeepSeek thinking rule, images and every refusal.
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sha256Digest } from '../../src/core/canonical-json.js';
import type { AttachmentRef, Message } from '../../src/core/messages.js';
import { ProviderError } from '../../src/providers/provider-error.js';
import { genericProfile, resolveProfile } from '../../src/providers/provider-profiles.js';
import { toWireBody } from '../../src/providers/wire-body.js';
import { attachment, builtRequest, GOLDEN_IMAGE_BYTES, goldenRequest, weatherTool } from '../helpers/built-request.js';

const deepseek = resolveProfile('deepseek');
const openai = resolveProfile('openai');
const GOLDEN_PATH = new URL('./fixtures/golden-wire-body.json', import.meta.url);

const readGolden = (ref: AttachmentRef): Promise<Uint8Array> => {
  if (ref.id !== attachment(GOLDEN_IMAGE_BYTES).id) throw new Error(`unexpected attachment ${ref.id}`);
  return Promise.resolve(GOLDEN_IMAGE_BYTES);
};

interface WireJson {
  messages: Array<Record<string, unknown>>;
  [key: string]: unknown;
}
const parse = (body: string): WireJson => JSON.parse(body) as WireJson;

async function expectRefusal(promise: Promise<unknown>, code: string, pattern: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  expect((error as ProviderError).code).toBe(code);
  expect((error as ProviderError).message).toMatch(pattern);
}

describe('toWireBody golden bytes', () => {
  it('serializes the golden request to the committed bytes', async () => {
    const wire = await toWireBody(goldenRequest(), deepseek, readGolden);
    if (process.env.UPDATE_GOLDEN === '1') {
      writeFileSync(GOLDEN_PATH, `${JSON.stringify(wire, null, 2)}\n`);
    }
    const golden = JSON.parse(readFileSync(GOLDEN_PATH, 'utf8')) as { body: string; digest: string; bytes: number };
    expect(wire.body).toBe(golden.body);
    expect(wire.digest).toBe(golden.digest);
    expect(wire.bytes).toBe(golden.bytes);
    expect(wire.digest).toBe(sha256Digest(wire.body));
    expect(wire.bytes).toBe(Buffer.byteLength(wire.body, 'utf8'));
  });

  it('is deterministic and keys are sorted at every level', async () => {
    const a = await toWireBody(goldenRequest(), deepseek, readGolden);
    const b = await toWireBody(goldenRequest(), deepseek, readGolden);
    expect(a).toEqual(b);
    const keys = Object.keys(parse(a.body));
    expect(keys).toEqual([...keys].sort());
  });

  it('spells every field the chat-completions way', async () => {
    const body = parse((await toWireBody(goldenRequest(), deepseek, readGolden)).body);
    expect(body).toMatchObject({
      model: 'deepseek-flash',
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.7,
      top_p: 0.95,
      max_tokens: 512,
      stop: ['</done>'],
      reasoning_effort: 'high',
      thinking: { type: 'enabled' },
      response_format: { type: 'text' },
      user: 'dh-golden',
    });
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: { name: 'get_weather', description: weatherTool.description, parameters: weatherTool.parameters },
      },
      expect.objectContaining({ type: 'function', function: expect.objectContaining({ name: 'get_time' }) as unknown }),
    ]);
    expect(body.messages[0]).toEqual({ role: 'system', content: goldenRequest().system });
    expect(body.messages[1]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'What is in this picture?' },
        {
          type: 'image_url',
          image_url: { url: `data:image/png;base64,${Buffer.from(GOLDEN_IMAGE_BYTES).toString('base64')}` },
        },
      ],
    });
    expect(body.messages[4]).toEqual({
      role: 'assistant',
      content: null,
      reasoning_content: 'Two independent lookups: call both tools.',
      tool_calls: [
        {
          id: 'call_1',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city": "Paris","unit":"c"}' },
        },
        { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{"zone":"Europe/Paris"}' } },
      ],
    });
    expect(body.messages[5]).toEqual({ role: 'tool', tool_call_id: 'call_1', content: '18°C, cloudy' });
  });

  it('omits every optional field that is not recorded', async () => {
    const body = parse(
      (await toWireBody(builtRequest({ config: { provider: 'openai', model: 'gpt-4o', thinking: undefined } }), openai))
        .body,
    );
    expect(Object.keys(body).sort()).toEqual(['messages', 'model', 'stream']);
    expect(body.messages).toEqual([{ role: 'user', content: 'Hello' }]);
  });

  it('an assistant message that only calls tools sends content null, or "" when the header says nullContentAs', async () => {
    const messages = [
      { role: 'user' as const, content: 'Weather?' },
      { role: 'assistant' as const, content: null, toolCalls: [{ id: 'c1', name: 'get_weather', arguments: '{}' }] },
      { role: 'tool' as const, toolCallId: 'c1', content: 'sunny' },
    ];
    const absent = parse((await toWireBody(builtRequest({ messages }), deepseek)).body);
    expect(absent.messages[1]).toMatchObject({ role: 'assistant', content: null });
    const empty = parse(
      (await toWireBody(builtRequest({ messages, config: { nullContentAs: 'empty-string' } }), deepseek)).body,
    );
    expect(empty.messages[1]).toMatchObject({ role: 'assistant', content: '' });
    expect(Object.keys(empty).sort()).toEqual(Object.keys(absent).sort());
  });

  it('sends stream: false without stream_options when the header says stream false', async () => {
    const whole = parse(
      (await toWireBody(builtRequest({ config: { stream: false, includeUsage: true } }), deepseek)).body,
    );
    expect(whole.stream).toBe(false);
    expect('stream_options' in whole).toBe(false);
  });

  it('sends stream_options exactly as recorded, including false', async () => {
    const off = parse((await toWireBody(builtRequest({ config: { includeUsage: false } }), deepseek)).body);
    expect(off.stream_options).toEqual({ include_usage: false });
  });
});

describe('DeepSeek thinking rule', () => {
  const history: Message[] = [
    { role: 'user', content: 'Weather?' },
    {
      role: 'assistant',
      content: null,
      reasoning: 'Need the tool.',
      toolCalls: [{ id: 'c1', name: 'get_weather', arguments: '{"city":"Oslo"}' }],
    },
    { role: 'tool', toolCallId: 'c1', content: 'cold' },
    { role: 'assistant', content: 'It is cold.', reasoning: 'Summarize.' },
    { role: 'user', content: 'Thanks. And tomorrow?' },
  ];

  it('sends reasoning_content for every assistant message with reasoning when thinking is enabled', async () => {
    const body = parse(
      (await toWireBody(builtRequest({ config: { thinking: 'enabled' }, messages: history }), deepseek)).body,
    );
    const assistants = body.messages.filter((m) => m.role === 'assistant');
    expect(assistants.map((m) => m.reasoning_content)).toEqual(['Need the tool.', 'Summarize.']);
  });

  it('gives a tool-calling assistant message without reasoning an empty reasoning_content on thinking requests', async () => {
    const messages: Message[] = [
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'get_weather', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'c1', content: 'cold' },
      { role: 'assistant', content: 'Cold.' },
    ];
    const body = parse((await toWireBody(builtRequest({ config: { thinking: 'enabled' }, messages }), deepseek)).body);
    expect(body.messages[1]).toMatchObject({ reasoning_content: '' });
    expect(body.messages[3]).not.toHaveProperty('reasoning_content');
  });

  it('never sends reasoning when thinking is disabled', async () => {
    const { body } = await toWireBody(builtRequest({ config: { thinking: 'disabled' }, messages: history }), deepseek);
    expect(body).not.toContain('reasoning_content');
    expect(body).not.toContain('Need the tool.');
  });

  it('never sends reasoning on a profile without a thinking field', async () => {
    const { body } = await toWireBody(
      builtRequest({ config: { provider: 'openai', model: 'gpt-4o', thinking: undefined }, messages: history }),
      openai,
    );
    expect(body).not.toContain('reasoning_content');
  });

  it('keeps request N+1 a message-wise extension of request N (prefix-stable)', async () => {
    const turn1 = history.slice(0, 4);
    const turn2: Message[] = [
      ...history,
      { role: 'assistant', content: 'Colder.', reasoning: 'Forecast.' },
      { role: 'user', content: 'Ok' },
    ];
    const a = parse(
      (await toWireBody(builtRequest({ config: { thinking: 'enabled' }, messages: turn1 }), deepseek)).body,
    );
    const b = parse(
      (await toWireBody(builtRequest({ config: { thinking: 'enabled' }, messages: turn2 }), deepseek)).body,
    );
    const serialized = (m: unknown): string => JSON.stringify(m);
    expect(b.messages.slice(0, a.messages.length).map(serialized)).toEqual(a.messages.map(serialized));
  });

  it('requires thinking to be recorded for models that think by default', async () => {
    await expectRefusal(
      toWireBody(builtRequest({ config: { model: 'deepseek-v4-pro', thinking: undefined } }), deepseek),
      'UNSUPPORTED_REQUEST',
      /thinks by default/,
    );
  });

  it('refuses thinking on a profile that has no thinking field', async () => {
    await expectRefusal(
      toWireBody(builtRequest({ config: { provider: 'openai', model: 'gpt-4o', thinking: 'enabled' } }), openai),
      'UNSUPPORTED_REQUEST',
      /no thinking field/,
    );
  });

  it('refuses disabling thinking on a model that always thinks', async () => {
    await expectRefusal(
      toWireBody(builtRequest({ config: { model: 'deepseek-reasoner', thinking: 'disabled' } }), deepseek),
      'UNSUPPORTED_REQUEST',
      /always thinks/,
    );
  });
});

describe('images', () => {
  const bytes = new Uint8Array([1, 2, 3, 4, 5]);
  const ref = attachment(bytes, 'image/jpeg');
  const withImage: Message[] = [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', attachment: ref },
      ],
    },
  ];

  it('sends image_url data URLs to a vision model', async () => {
    const body = parse(
      (
        await toWireBody(builtRequest({ config: { model: 'deepseek-flash' }, messages: withImage }), deepseek, () =>
          Promise.resolve(bytes),
        )
      ).body,
    );
    expect(body.messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${Buffer.from(bytes).toString('base64')}` } },
      ],
    });
  });

  it('refuses images for a text-only model before reading any attachment', async () => {
    let reads = 0;
    await expectRefusal(
      toWireBody(
        builtRequest({ config: { model: 'deepseek-v4-pro', thinking: 'disabled' }, messages: withImage }),
        deepseek,
        () => {
          reads += 1;
          return Promise.resolve(bytes);
        },
      ),
      'UNSUPPORTED_REQUEST',
      /does not accept images/,
    );
    expect(reads).toBe(0);
  });

  it('refuses attachment bytes that do not match their digest', async () => {
    const error = await toWireBody(
      builtRequest({ config: { model: 'deepseek-flash' }, messages: withImage }),
      deepseek,
      () => Promise.resolve(new Uint8Array([9, 9, 9, 9, 9])),
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ATTACHMENT_CORRUPT' });
  });
});

describe('refusals', () => {
  it('refuses extraBody keys that collide with adapter-owned fields', async () => {
    await expectRefusal(
      toWireBody(builtRequest({ config: { extraBody: { temperature: 2, seed: 1 } } }), deepseek),
      'UNSUPPORTED_REQUEST',
      /temperature/,
    );
    await expectRefusal(
      toWireBody(builtRequest({ config: { extraBody: { stream: false } } }), deepseek),
      'UNSUPPORTED_REQUEST',
      /stream/,
    );
  });

  it('refuses unknown models on a profile that lists its models', async () => {
    await expectRefusal(
      toWireBody(builtRequest({ config: { model: 'deepseek-nope' } }), deepseek),
      'UNSUPPORTED_REQUEST',
      /not in profile/,
    );
  });

  it('refuses a request built for another provider', async () => {
    await expectRefusal(toWireBody(builtRequest(), openai), 'UNSUPPORTED_REQUEST', /profile is "openai"/);
  });

  it('accepts extraBody on a generic profile', async () => {
    const profile = genericProfile({
      name: 'local',
      baseURL: 'http://127.0.0.1:1/v1',
      apiKeyEnv: 'LOCAL_KEY',
      models: [{ id: 'm', contextWindow: 8192, vision: false, thinking: 'none' }],
    });
    const body = parse(
      (
        await toWireBody(
          builtRequest({ config: { provider: 'local', model: 'm', thinking: undefined, extraBody: { seed: 7 } } }),
          profile,
        )
      ).body,
    );
    expect(body.seed).toBe(7);
  });
});
