// Profiles: built-ins, overrides, generic profiles, model lookup and key lookup.
import { describe, expect, it } from 'vitest';
import { apiKeyFromEnv, modelInfo, resolveProfile } from '../../src/providers/provider-profiles.js';

describe('resolveProfile', () => {
  it('has the DeepSeek and OpenAI built-ins', () => {
    const deepseek = resolveProfile('deepseek');
    expect(deepseek.baseURL).toBe('https://api.deepseek.com');
    expect(deepseek.apiKeyEnv).toBe('DEEPSEEK_API_KEY');
    expect(modelInfo(deepseek, 'deepseek-v4-flash')).toMatchObject({ thinking: 'default-on', vision: false });
    expect(modelInfo(deepseek, 'deepseek-reasoner')).toMatchObject({ thinking: 'always' });
    const openai = resolveProfile('openai');
    expect(openai.apiKeyEnv).toBe('OPENAI_API_KEY');
    expect(openai.thinkingField).toBe(false);
    expect(modelInfo(openai, 'gpt-4o').vision).toBe(true);
    expect(modelInfo(openai, 'some-future-model')).toMatchObject({ id: 'some-future-model', vision: false });
  });

  it('applies overrides and merges models by id', () => {
    const profile = resolveProfile('deepseek', {
      baseURL: 'http://127.0.0.1:4000/v1',
      models: [{ id: 'deepseek-v4-pro', contextWindow: 64_000, vision: true, thinking: 'optional' }],
    });
    expect(profile.baseURL).toBe('http://127.0.0.1:4000/v1');
    expect(modelInfo(profile, 'deepseek-v4-pro')).toMatchObject({ contextWindow: 64_000, vision: true });
    expect(modelInfo(profile, 'deepseek-v4-flash').contextWindow).toBe(1_000_000);
    expect(Object.isFrozen(profile)).toBe(true);
    expect(Object.isFrozen(profile.models[0])).toBe(true);
  });

  it('builds generic profiles and refuses incomplete ones', () => {
    const profile = resolveProfile('local', {
      baseURL: 'http://localhost:8080/v1',
      apiKeyEnv: 'LOCAL_API_KEY',
      models: [{ id: 'qwen', contextWindow: 32_768, vision: false, thinking: 'none' }],
    });
    expect(profile).toMatchObject({ name: 'local', thinkingField: false, unlistedModels: 'refuse' });
    expect(() => modelInfo(profile, 'other')).toThrow(/not in profile "local"/);
    expect(() => resolveProfile('local', { baseURL: 'http://x' })).toThrow(
      'profile "local" is not built in (deepseek, openai): a generic profile needs baseURL and at least one model (missing: models)',
    );
    expect(() => resolveProfile('local', {})).toThrow(/\(missing: baseURL, models\)$/);
    expect(() =>
      resolveProfile('local', {
        baseURL: 'ftp://x',
        apiKeyEnv: 'K',
        models: [{ id: 'm', contextWindow: 1, vision: false, thinking: 'none' }],
      }),
    ).toThrow(/baseURL/);
    expect(() =>
      resolveProfile('local', {
        baseURL: 'http://x',
        apiKeyEnv: 'lower-case',
        models: [{ id: 'm', contextWindow: 1, vision: false, thinking: 'none' }],
      }),
    ).toThrow(/apiKeyEnv/);
  });

  it('a generic profile without apiKeyEnv reads DH_API_KEY and may run without a key', () => {
    const endpoint = {
      baseURL: 'http://127.0.0.1:8080/v1',
      models: [{ id: 'qwen', contextWindow: 32_768, vision: false, thinking: 'none' as const }],
    };
    const keyless = resolveProfile('local', endpoint);
    expect(keyless).toMatchObject({ apiKeyEnv: 'DH_API_KEY', apiKeyOptional: true });
    expect(apiKeyFromEnv(keyless, {})).toBe('');
    expect(apiKeyFromEnv(keyless, { DH_API_KEY: '  ' })).toBe('');
    expect(apiKeyFromEnv(keyless, { DH_API_KEY: 'sk-local' })).toBe('sk-local');
    // A variable someone named must be set; a built-in provider's key is never optional.
    const named = resolveProfile('local', { ...endpoint, apiKeyEnv: 'LOCAL_KEY' });
    expect(named.apiKeyOptional).toBeUndefined();
    expect(() => apiKeyFromEnv(named, {})).toThrow(
      'no API key: set the environment variable LOCAL_KEY for profile "local"',
    );
    expect(resolveProfile('openai').apiKeyOptional).toBeUndefined();
    expect(() => apiKeyFromEnv(resolveProfile('openai'), {})).toThrow(/OPENAI_API_KEY/);
  });

  it('reads the key from the named variable and never echoes a value', () => {
    const profile = resolveProfile('deepseek');
    expect(apiKeyFromEnv(profile, { DEEPSEEK_API_KEY: 'sk-abc' })).toBe('sk-abc');
    expect(() => apiKeyFromEnv(profile, {})).toThrow(/DEEPSEEK_API_KEY/);
  });
});
