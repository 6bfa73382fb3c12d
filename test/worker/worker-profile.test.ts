// The worker's profile and output limit from its configuration: DH_CONTEXT_WINDOW and DH_MAX_TOKENS as
// read from the environment, the one generic-model fallback, and the default max_tokens of a generic
// endpoint (never above the window).
import { describe, expect, it } from 'vitest';
import { readWorkerConfig } from '../../src/config/worker-config.js';
import {
  GENERIC_CONTEXT_WINDOW,
  GENERIC_MAX_TOKENS,
  genericMaxTokens,
  workerMaxTokens,
  workerProfile,
} from '../../src/config/worker-profile.js';
import { DhError } from '../../src/core/index.js';
import { modelInfo } from '../../src/providers/provider-profiles.js';

const generic = (extra: NodeJS.ProcessEnv = {}) =>
  readWorkerConfig({
    DH_PROVIDER: 'llama',
    DH_BASE_URL: 'http://127.0.0.1:8080/v1',
    DH_MODEL: 'local',
    DH_API_KEY_ENV: 'LLAMA_KEY',
    ...extra,
  });

function configError(env: NodeJS.ProcessEnv): DhError {
  try {
    generic(env);
  } catch (error) {
    if (error instanceof DhError) return error;
    throw error;
  }
  throw new Error(`${JSON.stringify(env)} was accepted`);
}

describe('DH_CONTEXT_WINDOW and DH_MAX_TOKENS', () => {
  it('are read as whole numbers; unset, neither is in the configuration', () => {
    expect(generic({ DH_CONTEXT_WINDOW: '32768', DH_MAX_TOKENS: '1024' })).toMatchObject({
      contextWindow: 32768,
      maxTokens: 1024,
    });
    const plain = generic();
    expect('contextWindow' in plain || 'maxTokens' in plain).toBe(false);
  });

  it.each([
    ['DH_CONTEXT_WINDOW', 'lots'],
    ['DH_CONTEXT_WINDOW', '100'],
    ['DH_CONTEXT_WINDOW', '8192.5'],
    ['DH_MAX_TOKENS', '0'],
    ['DH_MAX_TOKENS', '-5'],
  ])('%s=%s is one line naming the variable', (variable, value) => {
    const error = configError({ [variable]: value });
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.message).toMatch(new RegExp(`^invalid configuration: ${variable}: [^\\n]+$`));
  });

  it('a limit above the window is refused when both are configured', () => {
    expect(configError({ DH_CONTEXT_WINDOW: '4096', DH_MAX_TOKENS: '8192' }).message).toBe(
      'invalid configuration: DH_MAX_TOKENS (8192) exceeds DH_CONTEXT_WINDOW (4096)',
    );
  });
});

describe('DH_TEMPERATURE', () => {
  it('is read as a number from 0 to 2; unset, the configuration has none', () => {
    expect(generic({ DH_TEMPERATURE: '0' }).temperature).toBe(0);
    expect(generic({ DH_TEMPERATURE: '0.7' }).temperature).toBe(0.7);
    expect('temperature' in generic()).toBe(false);
  });

  it.each(['', 'hot', '-1', '2.5', '1e0'])('DH_TEMPERATURE=%j is one line naming the variable', (value) => {
    const error = configError({ DH_TEMPERATURE: value });
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.message).toMatch(/^invalid configuration: DH_TEMPERATURE: [^\n]+$/);
  });
});

describe('DH_STREAM and DH_EXTRA_BODY', () => {
  it('off and a JSON object are read; unset, the configuration has neither', () => {
    expect(generic({ DH_STREAM: 'off', DH_EXTRA_BODY: '{"tool_choice":"auto","top_k":20}' })).toMatchObject({
      stream: false,
      extraBody: { tool_choice: 'auto', top_k: 20 },
    });
    expect(generic({ DH_STREAM: 'on' }).stream).toBeUndefined();
    const plain = generic();
    expect('stream' in plain || 'extraBody' in plain).toBe(false);
  });

  it.each([
    ['DH_STREAM', 'no'],
    ['DH_EXTRA_BODY', 'tool_choice=auto'],
    ['DH_EXTRA_BODY', '["auto"]'],
    ['DH_EXTRA_BODY', '{"max_tokens":5}'],
  ])('%s=%s is one line naming the variable', (variable, value) => {
    const error = configError({ [variable]: value });
    expect(error.message).toMatch(new RegExp(`^invalid configuration: ${variable}: [^\\n]+$`));
  });

  it('DH_EXTRA_BODY is refused for a built-in provider', () => {
    expect(() => readWorkerConfig({ DH_PROVIDER: 'deepseek', DH_EXTRA_BODY: '{"top_k":1}' })).toThrow(
      /DH_EXTRA_BODY is for generic endpoints/,
    );
  });
});

describe('the worker profile', () => {
  it("a generic endpoint's one model gets the fallback window, or the configured or discovered one", () => {
    expect(workerProfile(generic()).models).toEqual([
      { id: 'local', contextWindow: GENERIC_CONTEXT_WINDOW, vision: false, thinking: 'none' },
    ]);
    expect(workerProfile(generic({ DH_CONTEXT_WINDOW: '16384' })).models[0]?.contextWindow).toBe(16384);
    expect(workerProfile(generic(), { contextWindow: 8192 }).models[0]?.contextWindow).toBe(8192);
  });

  it('a generic endpoint with a model list: each served model with its reported window, others refused', () => {
    const profile = workerProfile(generic({ DH_CONTEXT_WINDOW: '16384' }), {
      served: [{ id: 'local' }, { id: 'large', contextWindow: 32_768 }, { id: 'tiny' }],
    });
    expect(profile.models).toEqual([
      { id: 'local', contextWindow: 16_384, vision: false, thinking: 'none' },
      { id: 'large', contextWindow: 32_768, vision: false, thinking: 'none' },
      { id: 'tiny', contextWindow: GENERIC_CONTEXT_WINDOW, vision: false, thinking: 'none' },
    ]);
    expect(modelInfo(profile, 'large').contextWindow).toBe(32_768);
    expect(() => modelInfo(profile, 'huge')).toThrow(
      'model "huge" is not in profile "llama" (known: local, large, tiny)',
    );
    // The configured model is always accepted: llama.cpp lists its one model under its file name, and answers any.
    const llama = workerProfile(generic(), { served: [{ id: 'models/qwen.gguf', contextWindow: 8192 }] });
    expect(llama.models.map((m) => m.id)).toEqual(['local', 'models/qwen.gguf']);
  });

  it('a generic endpoint without a model list (or the offline profile) accepts any model with the generic window', () => {
    for (const profile of [workerProfile(generic()), workerProfile(generic(), { served: undefined })]) {
      expect(modelInfo(profile, 'anything')).toEqual({
        id: 'anything',
        contextWindow: GENERIC_CONTEXT_WINDOW,
        vision: false,
        thinking: 'none',
      });
    }
  });

  it('a built-in model keeps its listed window unless DH_CONTEXT_WINDOW says otherwise', () => {
    const deepseek = readWorkerConfig({ DH_PROVIDER: 'deepseek', DH_MODEL: 'deepseek-v4-pro' });
    const listed = workerProfile(deepseek).models.find((m) => m.id === 'deepseek-v4-pro');
    expect(listed).toMatchObject({ contextWindow: 1_000_000, thinking: 'default-on' });
    const smaller = workerProfile({ ...deepseek, contextWindow: 200_000 }).models.find(
      (m) => m.id === 'deepseek-v4-pro',
    );
    expect(smaller).toEqual({ ...listed, contextWindow: 200_000 });
    // A model the profile refuses stays refused (at the first call), window or not.
    const unknown = readWorkerConfig({ DH_PROVIDER: 'deepseek', DH_MODEL: 'no-such-model', DH_CONTEXT_WINDOW: '9000' });
    expect(workerProfile(unknown).models.some((m) => m.id === 'no-such-model')).toBe(false);
    expect(() => modelInfo(workerProfile(deepseek), 'no-such-model')).toThrow(/not in profile "deepseek"/);
    // OpenAI ships many ids: one it does not list is assumed text-only with 128K, as before.
    const openai = workerProfile(readWorkerConfig({ DH_PROVIDER: 'openai' }));
    expect(modelInfo(openai, 'gpt-9')).toMatchObject({ contextWindow: 128_000, vision: false });
  });
});

describe('the max_tokens a worker records', () => {
  it(`a generic endpoint: ${GENERIC_MAX_TOKENS}, or a quarter of a small window`, () => {
    expect(genericMaxTokens(GENERIC_CONTEXT_WINDOW)).toBe(GENERIC_MAX_TOKENS);
    expect(genericMaxTokens(8192)).toBe(2048);
    expect(workerMaxTokens(generic(), GENERIC_CONTEXT_WINDOW)).toBe(GENERIC_MAX_TOKENS);
    expect(workerMaxTokens(generic(), 8192)).toBe(2048);
    expect(workerMaxTokens(generic(), 1000)).toBe(250);
  });

  it('DH_MAX_TOKENS wins, but not above the window (configured or discovered)', () => {
    expect(workerMaxTokens(generic({ DH_MAX_TOKENS: '6000' }), 8192)).toBe(6000);
    expect(() => workerMaxTokens(generic({ DH_MAX_TOKENS: '6000' }), 4096)).toThrow(
      'invalid configuration: DH_MAX_TOKENS (6000) exceeds the context window of model "local" (4096 tokens)',
    );
  });

  it("a built-in provider's model gets none unless configured (the provider applies its own)", () => {
    const openai = readWorkerConfig({ DH_PROVIDER: 'openai' });
    expect(workerMaxTokens(openai, 1_047_576)).toBeUndefined();
    expect(workerMaxTokens({ ...openai, maxTokens: 500 }, 1_047_576)).toBe(500);
  });
});
