// The cache simulation end to end over HTTP: a growing conversation (each request echoes the reply
// and extends the previous one) gets hits only where the provider's rules allow, and a changed
// system prompt, tool list or early message misses. Expected numbers come from the token counts, not
// from the server.
import { describe, expect, it } from 'vitest';
import type { ChatCompletionRequest } from '../../src/providers/chat-completion-request.js';
import { ChatCompletion, type Usage } from '../../src/scripted-provider/chat-completion-response.js';
import {
  canonicalInput,
  canonicalOutput,
  DEEPSEEK_CACHE_UNIT_TOKENS,
  OPENAI_CACHE_INCREMENT_TOKENS,
  OPENAI_CACHE_MIN_TOKENS,
  tokenCount,
} from '../../src/providers/prefix-cache.js';
import { post, readChunks, useProvider } from './helpers.js';
import type { ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';

type Messages = ChatCompletionRequest['messages'];
type Tools = NonNullable<ChatCompletionRequest['tools']>;

const TOOLS: Tools = [
  {
    type: 'function',
    function: {
      name: 'read_file',
      description: 'Read a UTF-8 text file from the workspace.',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
  },
];
const OTHER_TOOLS: Tools = [{ ...TOOLS[0]!, function: { ...TOOLS[0]!.function, description: 'Read a file.' } }];
const REPLIES = [
  'Alpha is the first letter.',
  'Beta comes second, after alpha.',
  'Gamma is third.',
  'x',
  'y',
  'z',
  'w',
];

const floorTo = (n: number, step: number): number => Math.floor(n / step) * step;
const sys = (text: string) => ({ role: 'system' as const, content: text });
const usr = (text: string) => ({ role: 'user' as const, content: text });
const asst = (text: string) => ({ role: 'assistant' as const, content: text });

async function usageOf(provider: ScriptedProvider, model: string, messages: Messages, tools: Tools): Promise<Usage> {
  const res = await post(provider, { model, messages, tools });
  expect(res.status).toBe(200);
  return ChatCompletion.parse(await res.json()).usage!;
}

function sharedPrefix(a: readonly number[], b: readonly number[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

describe('DeepSeek cache simulation over HTTP', () => {
  const system = 'You are a patient tutor of the Greek alphabet. Answer in one short sentence. '.repeat(12);

  it('a growing conversation hits whole units only; changed system, tools or early message miss', async () => {
    const provider = await useProvider({ cache: 'deepseek', replies: REPLIES.map((text) => ({ text })) });
    const model = 'deepseek-chat';
    const r1: Messages = [sys(system), usr('Question: what is alpha?')];
    const r2: Messages = [...r1, asst(REPLIES[0]!), usr('And beta?')];
    const r3: Messages = [...r2, asst(REPLIES[1]!), usr('And gamma?')];
    const input = (messages: Messages, tools = TOOLS) => canonicalInput({ model, messages, tools }).tokens;
    const out = (i: number) => canonicalOutput({ content: REPLIES[i]!, toolCalls: [] }).length;
    expect(input(r3).length).toBeLessThan(1024); // no fixed-interval units in play

    const u1 = await usageOf(provider, model, r1, TOOLS);
    expect(u1).toMatchObject({ prompt_tokens: input(r1).length, prompt_cache_hit_tokens: 0 });
    expect(u1.completion_tokens).toBe(tokenCount(REPLIES[0]!));

    // r2 contains r1's input+output unit whole: the hit is that unit in whole 64-token blocks.
    const u2 = await usageOf(provider, model, r2, TOOLS);
    expect(u2.prompt_cache_hit_tokens).toBe(floorTo(input(r1).length + out(0), DEEPSEEK_CACHE_UNIT_TOKENS));
    expect(u2.prompt_cache_hit_tokens).toBeGreaterThan(0);
    expect(u2.prompt_cache_miss_tokens).toBe(u2.prompt_tokens - u2.prompt_cache_hit_tokens!);

    const u3 = await usageOf(provider, model, r3, TOOLS);
    expect(u3.prompt_cache_hit_tokens).toBe(floorTo(input(r2).length + out(1), DEEPSEEK_CACHE_UNIT_TOKENS));

    // A changed system prompt or tool list is a different cache.
    const otherSystem: Messages = [sys(`${system} Be brief.`), ...r3.slice(1)];
    expect((await usageOf(provider, model, otherSystem, TOOLS)).prompt_cache_hit_tokens).toBe(0);
    expect((await usageOf(provider, model, r3, OTHER_TOOLS)).prompt_cache_hit_tokens).toBe(0);

    // A changed early message shares only a prefix no unit ends inside: a miss...
    const edited: Messages = [sys(system), usr('Question: what is omega?'), ...r2.slice(2)];
    expect((await usageOf(provider, model, edited, TOOLS)).prompt_cache_hit_tokens).toBe(0);
    // ...but that common prefix is now persisted as its own unit, and the next divergent request hits it.
    const common = sharedPrefix(input(edited), input(r1));
    const again: Messages = [sys(system), usr('Question: what is sigma?')];
    expect(sharedPrefix(input(again), input(r1))).toBeGreaterThanOrEqual(common);
    expect((await usageOf(provider, model, again, TOOLS)).prompt_cache_hit_tokens).toBe(
      floorTo(common, DEEPSEEK_CACHE_UNIT_TOKENS),
    );
  });

  it('reports the DeepSeek fields in the streamed usage chunk', async () => {
    const provider = await useProvider({ cache: 'deepseek', replies: [{ text: 'a', repeat: 2 }] });
    const body = {
      model: 'deepseek-chat',
      stream: true,
      stream_options: { include_usage: true },
      messages: [sys(system), usr('hi')],
    };
    await readChunks(await post(provider, body));
    const usage = (await readChunks(await post(provider, body))).at(-1)!.usage!;
    const promptTokens = canonicalInput(body).tokens.length;
    // The identical request matches the first one's whole input unit.
    expect(usage).toMatchObject({
      prompt_tokens: promptTokens,
      prompt_cache_hit_tokens: floorTo(promptTokens, DEEPSEEK_CACHE_UNIT_TOKENS),
    });
    expect(usage.prompt_tokens_details).toBeUndefined();
  });
});

describe('OpenAI cache simulation over HTTP', () => {
  const system = 'You are a meticulous assistant that explains the Greek alphabet letter by letter. '.repeat(80);

  it('hits only from 1024 shared tokens, in 128-token steps; changed system or tools miss', async () => {
    const provider = await useProvider({
      models: ['gpt-4o-mini'],
      cache: 'openai',
      replies: REPLIES.map((text) => ({ text })),
    });
    const model = 'gpt-4o-mini';
    const input = (messages: Messages, tools = TOOLS) => canonicalInput({ model, messages, tools }).tokens;
    expect(tokenCount(system)).toBeGreaterThan(OPENAI_CACHE_MIN_TOKENS);
    const r1: Messages = [sys(system), usr('Question: what is alpha?')];
    // Long follow-ups, so each request grows by more than one 128-token step.
    const r2: Messages = [...r1, asst(REPLIES[0]!), usr('And beta? Tell me its whole history. '.repeat(30))];
    const r3: Messages = [...r2, asst(REPLIES[1]!), usr('And gamma? Tell me its whole history. '.repeat(30))];

    const u1 = await usageOf(provider, model, r1, TOOLS);
    expect(u1.prompt_tokens_details).toEqual({ cached_tokens: 0 });
    expect(u1.prompt_cache_hit_tokens).toBeUndefined();
    const u2 = await usageOf(provider, model, r2, TOOLS);
    expect(u2.prompt_tokens_details?.cached_tokens).toBe(floorTo(input(r1).length, OPENAI_CACHE_INCREMENT_TOKENS));
    const u3 = await usageOf(provider, model, r3, TOOLS);
    expect(u3.prompt_tokens_details?.cached_tokens).toBe(floorTo(input(r2).length, OPENAI_CACHE_INCREMENT_TOKENS));

    const otherSystem: Messages = [sys(`${system} Be brief.`), ...r3.slice(1)];
    expect((await usageOf(provider, model, otherSystem, TOOLS)).prompt_tokens_details?.cached_tokens).toBe(0);
    expect((await usageOf(provider, model, r3, OTHER_TOOLS)).prompt_tokens_details?.cached_tokens).toBe(0);

    // A changed early message keeps only the shared prefix (the long system prompt), in 128s.
    const edited: Messages = [sys(system), usr('Question: what is omega?'), ...r2.slice(2)];
    const shared = sharedPrefix(input(edited), input(r3));
    const hit = (await usageOf(provider, model, edited, TOOLS)).prompt_tokens_details?.cached_tokens;
    expect(hit).toBe(floorTo(shared, OPENAI_CACHE_INCREMENT_TOKENS));
    expect(hit).toBeLessThan(u3.prompt_tokens_details!.cached_tokens!);
  });

  it('never caches a conversation shorter than 1024 tokens', async () => {
    const provider = await useProvider({
      models: ['gpt-4o-mini'],
      cache: 'openai',
      replies: [{ text: 'a', repeat: 3 }],
    });
    const r1: Messages = [sys('Short.'), usr('hi')];
    for (let i = 0; i < 3; i++) {
      expect((await usageOf(provider, 'gpt-4o-mini', r1, TOOLS)).prompt_tokens_details?.cached_tokens).toBe(0);
    }
  });
});

describe('cache option', () => {
  it('the start option overrides the script, and off reports no cache fields', async () => {
    const messages: Messages = [usr('hi')];
    const openai = await useProvider({ cache: 'deepseek', replies: [{ text: 'a' }] }, { cache: 'openai' });
    expect((await usageOf(openai, 'deepseek-chat', messages, TOOLS)).prompt_tokens_details).toEqual({
      cached_tokens: 0,
    });
    const off = await useProvider({ cache: 'deepseek', replies: [{ text: 'a' }] }, { cache: 'off' });
    const usage = await usageOf(off, 'deepseek-chat', messages, TOOLS);
    expect(Object.keys(usage).sort()).toEqual(['completion_tokens', 'prompt_tokens', 'total_tokens']);
  });
});
