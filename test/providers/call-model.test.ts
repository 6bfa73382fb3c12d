// callModel over real HTTP against the scripted provider: assembly, usage, every fault's code and
// retryability, interrupts, the byte-exact body on the wire, keys kept out of everything recorded, and no
// Authorization header at all for a keyless endpoint.
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { afterEach, describe, expect, it } from 'vitest';
import type { BuiltRequest } from '../../src/core/build-request.js';
import type { Message } from '../../src/core/messages.js';
import { MAX_FAILURE_MESSAGE_CHARS, toApplicationFailure } from '../../src/activities/to-application-failure.js';
import { callModel, type CallModelInput, type ModelDelta } from '../../src/providers/call-model.js';
import { createGuardedFetch } from '../../src/providers/guarded-fetch.js';
import { classifyProviderError, ProviderError } from '../../src/providers/provider-error.js';
import { apiKeyFromEnv, resolveProfile, type ProviderProfile } from '../../src/providers/provider-profiles.js';
import { toWireBody } from '../../src/providers/wire-body.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import type { Script } from '../../src/scripted-provider/script.js';
import { attachment, builtRequest, clockTool, weatherTool } from '../helpers/built-request.js';

const API_KEY = 'sk-dh-test-SECRET-5f2c9a7e1b3d';
const DEEPSEEK_MODELS = ['deepseek-v4-flash', 'deepseek-v4-pro', 'deepseek-flash', 'deepseek-reasoner'];

const servers: ScriptedProvider[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(script: Script): Promise<{ server: ScriptedProvider; profile: ProviderProfile }> {
  const server = await startScriptedProvider({ script });
  servers.push(server);
  const name = script.cache === 'openai' ? 'openai' : 'deepseek';
  return { server, profile: resolveProfile(name, { baseURL: server.url }) };
}

const deepseekScript = (replies: Script['replies'], extra: Partial<Script> = {}): Script => ({
  models: DEEPSEEK_MODELS,
  cache: 'deepseek',
  ...extra,
  replies,
});

function call(
  request: BuiltRequest,
  profile: ProviderProfile,
  extra: Partial<CallModelInput> = {},
): ReturnType<typeof callModel> {
  return callModel({ request, profile, apiKey: API_KEY, idleTimeoutMs: 2_000, ...extra });
}

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  const providerError = error as ProviderError;
  expect(providerError.message).not.toContain(API_KEY);
  expect(JSON.stringify(providerError.details)).not.toContain(API_KEY);
  return providerError;
}

function expectNoKeyRecorded(server: ScriptedProvider): void {
  const recorded = JSON.stringify(server.requests());
  expect(recorded).not.toContain(API_KEY);
  for (const request of server.requests()) {
    expect(request.headers.authorization).toBe('Bearer [redacted]');
  }
}

describe('callModel: assembly', () => {
  it('streams text, records the exact body, and keeps the key out of the record', async () => {
    const { server, profile } = await serve(deepseekScript([{ text: 'Hello there, streaming world!', chunkSize: 4 }]));
    const deltas: ModelDelta[] = [];
    const request = builtRequest({ system: 'Be brief.' });
    const result = await call(request, profile, { onDelta: (d) => deltas.push(d) });

    expect(result.message).toEqual({ content: 'Hello there, streaming world!', toolCalls: [], finishReason: 'stop' });
    expect(result.sent).toBe(true);
    expect(
      deltas
        .filter((d) => d.type === 'text')
        .map((d) => (d.type === 'text' ? d.text : ''))
        .join(''),
    ).toBe('Hello there, streaming world!');
    expect(deltas.length).toBeGreaterThan(3);

    const recorded = server.requests();
    expect(recorded).toHaveLength(1);
    expect(recorded[0]?.path).toBe('/v1/chat/completions');
    expect(recorded[0]?.body).toBe(result.wire.body);
    expect(recorded[0]?.body).toBe((await toWireBody(request, profile)).body);
    expectNoKeyRecorded(server);
  });

  it('assembles parallel tool calls from streamed fragments with their raw argument strings', async () => {
    const calls = [
      { id: 'call_a', name: 'get_weather', arguments: '{"city": "Paris",  "unit":"c"}' },
      { id: 'call_b', name: 'get_time', arguments: '{ "zone" : "Europe/Paris" }' },
    ];
    const { profile } = await serve(deepseekScript([{ text: 'Checking.', toolCalls: calls, chunkSize: 3 }]));
    const deltas: ModelDelta[] = [];
    const result = await call(builtRequest({ tools: [weatherTool, clockTool] }), profile, {
      onDelta: (d) => deltas.push(d),
    });
    expect(result.message.toolCalls).toEqual(calls);
    expect(result.message.content).toBe('Checking.');
    expect(result.message.finishReason).toBe('tool_calls');
    const fragments = deltas.filter((d) => d.type === 'tool-call');
    expect(fragments.length).toBeGreaterThan(calls.length * 3);
  });

  it('assembles reasoning_content deltas', async () => {
    const { profile } = await serve(
      deepseekScript([{ reasoning: 'First, think it through.', text: 'Done.', chunkSize: 5 }]),
    );
    const deltas: ModelDelta[] = [];
    const result = await call(builtRequest({ config: { thinking: 'enabled' } }), profile, {
      onDelta: (d) => deltas.push(d),
    });
    expect(result.message).toEqual({
      content: 'Done.',
      reasoning: 'First, think it through.',
      toolCalls: [],
      finishReason: 'stop',
    });
    expect(deltas.some((d) => d.type === 'reasoning')).toBe(true);
  });
});

describe('callModel: usage', () => {
  it('maps DeepSeek-style usage', async () => {
    const { profile } = await serve(
      deepseekScript([
        {
          text: 'ok',
          usage: {
            prompt_tokens: 100,
            completion_tokens: 20,
            total_tokens: 120,
            prompt_cache_hit_tokens: 64,
            prompt_cache_miss_tokens: 36,
            completion_tokens_details: { reasoning_tokens: 5 },
          },
        },
      ]),
    );
    const result = await call(builtRequest({ config: { includeUsage: true } }), profile);
    expect(result.usage).toEqual({ inputUncached: 36, cacheRead: 64, output: 15, reasoning: 5 });
  });

  it('maps OpenAI-style usage', async () => {
    const { profile } = await serve({
      models: ['gpt-4o'],
      cache: 'openai',
      replies: [
        {
          text: 'ok',
          usage: {
            prompt_tokens: 2048,
            completion_tokens: 10,
            total_tokens: 2058,
            prompt_tokens_details: { cached_tokens: 1920 },
            completion_tokens_details: { reasoning_tokens: 0 },
          },
        },
      ],
    });
    const request = builtRequest({
      config: { provider: 'openai', model: 'gpt-4o', thinking: undefined, includeUsage: true },
    });
    const result = await call(request, profile);
    expect(result.usage).toEqual({ inputUncached: 128, cacheRead: 1920, output: 10, reasoning: 0 });
  });

  it('reports simulated prefix-cache reads for a growing conversation', async () => {
    const { profile } = await serve(deepseekScript([{ text: 'First answer.' }, { text: 'Second answer.' }]));
    const system = `You are a meticulous assistant. ${'Background fact number one is here. '.repeat(60)}`;
    const first: Message[] = [{ role: 'user', content: 'Question one?' }];
    const a = await call(builtRequest({ system, messages: first, config: { includeUsage: true } }), profile);
    const second: Message[] = [
      ...first,
      { role: 'assistant', content: a.message.content },
      { role: 'user', content: 'Question two?' },
    ];
    const b = await call(builtRequest({ system, messages: second, config: { includeUsage: true } }), profile);
    expect(a.usage?.cacheRead).toBe(0);
    expect(b.usage?.cacheRead).toBeGreaterThan(0);
    expect(b.usage!.cacheRead + b.usage!.inputUncached).toBeGreaterThan(a.usage!.cacheRead + a.usage!.inputUncached);
  });

  it('has no usage when it was not asked for', async () => {
    const { server, profile } = await serve(deepseekScript([{ text: 'ok' }]));
    const result = await call(builtRequest(), profile);
    expect(result.usage).toBeUndefined();
    expect(server.requests()[0]?.body).not.toContain('stream_options');
  });
});

describe('callModel: faults', () => {
  it('429 → RATE_LIMITED with retryAfterMs', async () => {
    const { profile } = await serve(deepseekScript([{ fault: { kind: 'rate-limit', retryAfterSeconds: 2 } }]));
    const error = await failure(call(builtRequest(), profile));
    expect(error).toMatchObject({ code: 'RATE_LIMITED', retryable: true, retryAfterMs: 2000, status: 429 });
  });

  it('5xx → SERVER_ERROR (retryable)', async () => {
    const { profile } = await serve(
      deepseekScript([
        { fault: { kind: 'server-error', status: 500 } },
        { fault: { kind: 'server-error', status: 503 } },
      ]),
    );
    expect(await failure(call(builtRequest(), profile))).toMatchObject({
      code: 'SERVER_ERROR',
      retryable: true,
      status: 500,
    });
    expect(await failure(call(builtRequest(), profile))).toMatchObject({ code: 'SERVER_ERROR', status: 503 });
  });

  it('disconnect mid-stream → STREAM_CUT (retryable), partial discarded', async () => {
    const { profile } = await serve(
      deepseekScript([
        { text: 'This reply will be cut off halfway.', chunkSize: 4, fault: { kind: 'disconnect', afterChunks: 3 } },
      ]),
    );
    const deltas: ModelDelta[] = [];
    const error = await failure(call(builtRequest(), profile, { onDelta: (d) => deltas.push(d) }));
    expect(error).toMatchObject({ code: 'STREAM_CUT', retryable: true });
    expect(deltas.length).toBeGreaterThan(0);
  });

  it('hang with keep-alives → IDLE_STREAM from the watchdog within about the idle timeout', async () => {
    const { server, profile } = await serve(
      deepseekScript([{ fault: { kind: 'hang', keepAlive: true, keepAliveIntervalMs: 40 } }]),
    );
    const started = Date.now();
    const error = await failure(call(builtRequest(), profile, { idleTimeoutMs: 400 }));
    const elapsed = Date.now() - started;
    expect(error).toMatchObject({ code: 'IDLE_STREAM', retryable: true });
    expect(Number(error.details.commentLines)).toBeGreaterThan(2);
    expect(elapsed).toBeGreaterThanOrEqual(390);
    expect(elapsed).toBeLessThan(4_000); // the server would hang forever: only the watchdog ends this
    expect(server.requests()).toHaveLength(1);
  });

  it('hang without any bytes after the headers → IDLE_STREAM', async () => {
    const { profile } = await serve(deepseekScript([{ fault: { kind: 'hang' } }]));
    expect(await failure(call(builtRequest(), profile, { idleTimeoutMs: 200 }))).toMatchObject({ code: 'IDLE_STREAM' });
  });

  it('no response headers within timeoutMs → TIMEOUT', async () => {
    const { profile } = await serve(deepseekScript([{ text: 'late', delayMs: 2_000 }]));
    const error = await failure(call(builtRequest(), profile, { idleTimeoutMs: 5_000, timeoutMs: 200 }));
    expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true });
  });

  it('malformed SSE → MALFORMED_RESPONSE', async () => {
    const { profile } = await serve(deepseekScript([{ text: 'whatever', fault: { kind: 'malformed-sse' } }]));
    expect(await failure(call(builtRequest(), profile))).toMatchObject({ code: 'MALFORMED_RESPONSE', retryable: true });
  });

  it('a stream without choices → MALFORMED_RESPONSE', async () => {
    const { profile } = await serve(deepseekScript([{ fault: { kind: 'empty' } }]));
    expect(await failure(call(builtRequest(), profile))).toMatchObject({ code: 'MALFORMED_RESPONSE' });
  });

  it("a 200 that closes before a byte → CONTEXT_LENGTH_EXCEEDED on a generic endpoint (llama-cpp-python's streamed overflow), MALFORMED_RESPONSE on a built-in one", async () => {
    const { server, profile } = await serve(
      deepseekScript([{ fault: { kind: 'closed' } }, { fault: { kind: 'closed' } }]),
    );
    expect(await failure(call(builtRequest(), profile))).toMatchObject({ code: 'MALFORMED_RESPONSE', retryable: true });
    const generic = resolveProfile('llama', {
      baseURL: server.url,
      models: [{ id: 'deepseek-v4-flash', contextWindow: 512, vision: false, thinking: 'none' }],
    });
    const local = builtRequest({ config: { provider: 'llama', model: 'deepseek-v4-flash', thinking: undefined } });
    const error = await failure(call(local, generic));
    expect(error).toMatchObject({ code: 'CONTEXT_LENGTH_EXCEEDED', retryable: false, status: 200 });
    expect(error.message).toMatch(/closed the stream without sending anything/);
  });

  it("llama-cpp-python's 500 for a null assistant content (captured) → SERVER_ERROR; the failure Temporal keeps stays whole", async () => {
    const fixture = JSON.parse(
      readFileSync(new URL('./fixtures/llama-cpp-python/null-content-500.json', import.meta.url), 'utf8'),
    ) as { status: number; body: { error: { message: string; type: string } } };
    const { profile } = await serve(
      deepseekScript([{ fault: { kind: 'recorded', status: fixture.status, headers: {}, body: fixture.body } }]),
    );
    const error = await failure(call(builtRequest(), profile));
    expect(error).toMatchObject({ code: 'SERVER_ERROR', status: 500 });
    expect(error.message).toMatch(/validation errors/);
    const kept = toApplicationFailure(error);
    expect(kept.message.length).toBeLessThanOrEqual(MAX_FAILURE_MESSAGE_CHARS + 40);
    expect(JSON.stringify({ message: kept.message, stack: kept.stack, details: kept.details }).length).toBeLessThan(
      4_096,
    );
  });

  it('401 → AUTH, not retryable, and the key appears nowhere', async () => {
    const { server, profile } = await serve(deepseekScript([{ fault: { kind: 'status', status: 401 } }]));
    const error = await failure(call(builtRequest(), profile));
    expect(error).toMatchObject({ code: 'AUTH', retryable: false, status: 401 });
    expect(error.stack ?? '').not.toContain(API_KEY);
    expectNoKeyRecorded(server);
  });

  it('400 context length → CONTEXT_LENGTH_EXCEEDED, not retryable', async () => {
    const message =
      "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens " +
      '(139000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.';
    const { profile } = await serve(deepseekScript([{ fault: { kind: 'status', status: 400, message } }]));
    expect(await failure(call(builtRequest(), profile))).toMatchObject({
      code: 'CONTEXT_LENGTH_EXCEEDED',
      retryable: false,
    });
  });

  it('other 400 → BAD_REQUEST; unknown model → NOT_FOUND', async () => {
    const { profile } = await serve(
      deepseekScript([{ fault: { kind: 'status', status: 400, message: 'Invalid tools.' } }]),
    );
    expect(await failure(call(builtRequest(), profile))).toMatchObject({ code: 'BAD_REQUEST', retryable: false });
    const widened = resolveProfile('deepseek', {
      baseURL: profile.baseURL,
      models: [{ id: 'deepseek-gone', contextWindow: 1000, vision: false, thinking: 'none' }],
    });
    const notFound = await failure(
      call(builtRequest({ config: { model: 'deepseek-gone', thinking: undefined } }), widened),
    );
    expect(notFound).toMatchObject({ code: 'NOT_FOUND', retryable: false, status: 404 });
  });

  it('an unreachable server → STREAM_CUT (transport failure)', async () => {
    const { server, profile } = await serve(deepseekScript([]));
    await server.close();
    expect(await failure(call(builtRequest(), profile))).toMatchObject({ code: 'STREAM_CUT', retryable: true });
  });
});

describe('callModel: interrupts', () => {
  it('returns the partial text with interrupted: true on abort mid-stream', async () => {
    const { profile } = await serve(
      deepseekScript([{ text: 'one two three four five six seven eight nine ten', chunkSize: 4, chunkDelayMs: 20 }]),
    );
    const controller = new AbortController();
    let seen = '';
    const result = await call(builtRequest(), profile, {
      signal: controller.signal,
      onDelta: (d) => {
        if (d.type !== 'text') return;
        seen += d.text;
        if (seen.length >= 8) controller.abort();
      },
    });
    expect(result.message.interrupted).toBe(true);
    expect(result.message.finishReason).toBeNull();
    expect(result.message.content).toBe(seen);
    expect(result.message.content!.length).toBeLessThan('one two three four five six seven eight nine ten'.length);
    expect(result.sent).toBe(true);
  });

  it('drops a half-streamed tool call on abort', async () => {
    const { profile } = await serve(
      deepseekScript([
        {
          text: 'Let me check.',
          toolCalls: [{ id: 'call_x', name: 'get_weather', arguments: '{"city":"A very long city name indeed"}' }],
          chunkSize: 3,
          chunkDelayMs: 15,
        },
      ]),
    );
    const controller = new AbortController();
    const result = await call(builtRequest({ tools: [weatherTool] }), profile, {
      signal: controller.signal,
      onDelta: (d) => {
        if (d.type === 'tool-call' && d.arguments.length > 0) controller.abort();
      },
    });
    expect(result.message).toEqual({ content: 'Let me check.', toolCalls: [], finishReason: null, interrupted: true });
  });

  it('rethrows an onDelta exception as is (a caller bug is not a provider failure)', async () => {
    const { profile } = await serve(deepseekScript([{ text: 'some text here', chunkSize: 2 }]));
    const bug = new RangeError('display broke');
    const error = await call(builtRequest(), profile, {
      onDelta: () => {
        throw bug;
      },
    }).catch((e: unknown) => e);
    expect(error).toBe(bug);
  });

  it('sends nothing when already aborted', async () => {
    const { server, profile } = await serve(deepseekScript([{ text: 'never' }]));
    const controller = new AbortController();
    controller.abort();
    const result = await call(builtRequest(), profile, { signal: controller.signal });
    expect(result).toMatchObject({ sent: false, message: { interrupted: true, content: null, toolCalls: [] } });
    expect(server.requests()).toHaveLength(0);
  });
});

describe('callModel: the outbound guard', () => {
  it('refuses a verifiedBody that is not the derived body, sending nothing', async () => {
    const { server, profile } = await serve(deepseekScript([{ text: 'never' }]));
    const other = await toWireBody(builtRequest({ messages: [{ role: 'user', content: 'Other' }] }), profile);
    const error = await failure(call(builtRequest(), profile, { verifiedBody: other.body }));
    expect(error).toMatchObject({ code: 'WIRE_BODY_MISMATCH', retryable: false });
    expect(server.requests()).toHaveLength(0);
  });

  it('the guarded fetch refuses an SDK body that differs from the verified one (server receives nothing)', async () => {
    const { server, profile } = await serve(deepseekScript([{ text: 'never' }]));
    const verified = await toWireBody(builtRequest(), profile);
    const guard = createGuardedFetch({ verifiedBody: verified.body, idleTimeoutMs: 1_000 });
    const client = new OpenAI({
      apiKey: API_KEY,
      baseURL: server.url,
      maxRetries: 0,
      fetch: guard.fetch,
      logLevel: 'off',
    });
    const tampered = { ...(JSON.parse(verified.body) as ChatCompletionCreateParamsStreaming), temperature: 1.5 };
    const error = await client.chat.completions.create(tampered).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeDefined();
    expect(guard.state.refusal).toMatchObject({ code: 'WIRE_BODY_MISMATCH' });
    expect(classifyProviderError(error)).toBe(guard.state.refusal);
    expect(guard.state.sent).toBe(false);
    expect(server.requests()).toHaveLength(0);
  });

  it('the guarded fetch sends the verified bytes when the SDK re-serializes the same JSON in another order', async () => {
    const { server, profile } = await serve(deepseekScript([{ text: 'ok' }]));
    const verified = await toWireBody(builtRequest({ tools: [weatherTool] }), profile);
    const parsed = JSON.parse(verified.body) as Record<string, unknown>;
    const reordered = Object.fromEntries(
      Object.entries(parsed).reverse(),
    ) as unknown as ChatCompletionCreateParamsStreaming;
    const guard = createGuardedFetch({ verifiedBody: verified.body, idleTimeoutMs: 1_000 });
    const client = new OpenAI({
      apiKey: API_KEY,
      baseURL: server.url,
      maxRetries: 0,
      fetch: guard.fetch,
      logLevel: 'off',
    });
    const stream = await client.chat.completions.create(reordered);
    for await (const _chunk of stream) {
      // drain
    }
    expect(guard.state.bodyCheck).toBe('json-equal');
    expect(server.requests()[0]?.body).toBe(verified.body);
  });
});

describe('callModel: thinking rule and images over the wire', () => {
  const toolHistory: Message[] = [
    { role: 'user', content: 'Weather in Oslo?' },
    {
      role: 'assistant',
      content: null,
      reasoning: 'I should call the weather tool.',
      toolCalls: [{ id: 'c1', name: 'get_weather', arguments: '{"city":"Oslo"}' }],
    },
    { role: 'tool', toolCallId: 'c1', content: '-3°C' },
    { role: 'assistant', content: 'It is -3°C.', reasoning: 'Report it.' },
    { role: 'user', content: 'And tomorrow?' },
  ];

  it('thinking config: reasoning_content goes back and a strict server accepts the history', async () => {
    const { server, profile } = await serve(
      deepseekScript([{ reasoning: 'Forecast.', text: 'Colder.' }], { reasoningPassBack: 'all-turns' }),
    );
    const result = await call(
      builtRequest({ config: { thinking: 'enabled' }, tools: [weatherTool], messages: toolHistory }),
      profile,
    );
    expect(result.message.content).toBe('Colder.');
    const sent = JSON.parse(server.requests()[0]!.body) as { messages: Array<Record<string, unknown>> };
    expect(sent.messages.filter((m) => m.role === 'assistant').map((m) => m.reasoning_content)).toEqual([
      'I should call the weather tool.',
      'Report it.',
    ]);
  });

  it('non-thinking config: no reasoning is ever sent', async () => {
    const { server, profile } = await serve(deepseekScript([{ text: 'Colder.' }]));
    await call(
      builtRequest({ config: { thinking: 'disabled' }, tools: [weatherTool], messages: toolHistory }),
      profile,
    );
    expect(server.requests()[0]?.body).not.toContain('reasoning_content');
  });

  const imageBytes = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]);
  const withImage: Message[] = [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image', attachment: attachment(imageBytes, 'image/jpeg') },
      ],
    },
  ];

  it('a vision model gets image_url parts', async () => {
    const { server, profile } = await serve(deepseekScript([{ text: 'A JPEG.' }]));
    await call(builtRequest({ config: { model: 'deepseek-flash' }, messages: withImage }), profile, {
      readAttachment: () => Promise.resolve(imageBytes),
    });
    const sent = JSON.parse(server.requests()[0]!.body) as { messages: Array<{ content: unknown }> };
    expect(sent.messages[0]?.content).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${Buffer.from(imageBytes).toString('base64')}` } },
    ]);
  });

  it('a text-only model fails clearly before any request', async () => {
    const { server, profile } = await serve(deepseekScript([{ text: 'never' }]));
    const error = await failure(
      call(builtRequest({ config: { model: 'deepseek-v4-pro' }, messages: withImage }), profile, {
        readAttachment: () => Promise.resolve(imageBytes),
      }),
    );
    expect(error).toMatchObject({ code: 'UNSUPPORTED_REQUEST', retryable: false });
    expect(error.message).toMatch(/does not accept images/);
    expect(server.requests()).toHaveLength(0);
  });
});

describe('callModel: keys', () => {
  const localModels = [{ id: 'local-model', contextWindow: 8192, vision: false, thinking: 'none' as const }];
  const localRequest = () => builtRequest({ config: { provider: 'local', model: 'local-model', thinking: undefined } });

  it('a generic endpoint without a key gets no Authorization header (nor any other credential)', async () => {
    const server = await startScriptedProvider({ script: { models: ['local-model'], replies: [{ text: 'ok' }] } });
    servers.push(server);
    const profile = resolveProfile('local', { baseURL: server.url, models: localModels });
    const apiKey = apiKeyFromEnv(profile, {});
    expect(apiKey).toBe('');
    const result = await callModel({ request: localRequest(), profile, apiKey, idleTimeoutMs: 2_000 });
    expect(result.message.content).toBe('ok');
    const headers = server.requests()[0]?.headers ?? {};
    expect(Object.keys(headers)).not.toContain('authorization');
    expect(Object.keys(headers)).not.toContain('api-key');
    expect(Object.keys(headers)).not.toContain('x-api-key');
  });

  it('the same endpoint with DH_API_KEY set sends it as a bearer token', async () => {
    const server = await startScriptedProvider({ script: { models: ['local-model'], replies: [{ text: 'ok' }] } });
    servers.push(server);
    const profile = resolveProfile('local', { baseURL: server.url, models: localModels });
    const apiKey = apiKeyFromEnv(profile, { DH_API_KEY: API_KEY });
    await callModel({ request: localRequest(), profile, apiKey, idleTimeoutMs: 2_000 });
    expectNoKeyRecorded(server);
  });
});

describe('callModel: one whole response (config.stream false)', () => {
  const localModels = [{ id: 'local-model', contextWindow: 8192, vision: false, thinking: 'none' as const }];
  const wholeRequest = (extraBody?: Record<string, string>) =>
    builtRequest({
      config: {
        provider: 'local',
        model: 'local-model',
        thinking: undefined,
        stream: false,
        includeUsage: true,
        ...(extraBody ? { extraBody } : {}),
      },
      tools: [weatherTool],
    });

  it('sends stream: false without stream_options and assembles text, tool calls, finish reason and usage', async () => {
    const server = await startScriptedProvider({
      script: {
        models: ['local-model'],
        cache: 'openai',
        replies: [
          { text: 'all at once' },
          { toolCalls: [{ id: 'c1', name: 'get_weather', arguments: '{"city":"Oslo"}' }] },
        ],
      },
    });
    servers.push(server);
    const profile = resolveProfile('local', { baseURL: server.url, models: localModels });
    const deltas: ModelDelta[] = [];
    const first = await callModel({
      request: wholeRequest({ tool_choice: 'auto' }),
      profile,
      apiKey: '',
      idleTimeoutMs: 2_000,
      onDelta: (d) => deltas.push(d),
    });
    expect(first.message).toEqual({ content: 'all at once', toolCalls: [], finishReason: 'stop' });
    expect(first.usage?.output).toBeGreaterThan(0);
    // The whole answer's usage is reported like a stream's last chunk: as it arrived, before the text.
    expect(deltas).toEqual([
      { type: 'usage', usage: first.usage },
      { type: 'text', text: 'all at once' },
    ]);
    const body = JSON.parse(server.requests()[0]?.body ?? '{}') as Record<string, unknown>;
    expect(body).toMatchObject({ stream: false, tool_choice: 'auto' });
    expect('stream_options' in body).toBe(false);

    const second = await callModel({ request: wholeRequest(), profile, apiKey: '', idleTimeoutMs: 2_000 });
    expect(second.message).toEqual({
      content: null,
      toolCalls: [{ id: 'c1', name: 'get_weather', arguments: '{"city":"Oslo"}' }],
      finishReason: 'tool_calls',
    });
  });
});
