// DH_PROVIDER, DH_BASE_URL and DH_MODEL as readWorkerConfig reads them: built-ins with their default
// models, generic endpoints, and one INVALID_CONFIG line that names the variable that is wrong or missing.
import { describe, expect, it } from 'vitest';
import { readWorkerConfig } from '../../src/config/worker-config.js';
import { DhError } from '../../src/core/errors.js';

function configError(env: NodeJS.ProcessEnv): DhError {
  let error: unknown;
  try {
    readWorkerConfig(env);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(DhError);
  expect((error as DhError).code).toBe('INVALID_CONFIG');
  expect((error as DhError).message).not.toContain('\n');
  return error as DhError;
}

describe('provider choice', () => {
  it('reads built-ins with their default models, and a complete generic endpoint', () => {
    expect(readWorkerConfig({})).toMatchObject({ provider: 'deepseek', model: 'deepseek-v4-flash' });
    expect(readWorkerConfig({ DH_PROVIDER: 'openai' })).toMatchObject({ provider: 'openai', model: 'gpt-4.1-mini' });
    expect(readWorkerConfig({ DH_PROVIDER: 'openai', DH_MODEL: 'o4-mini' }).model).toBe('o4-mini');
    const local = { DH_PROVIDER: 'llamacpp', DH_BASE_URL: 'http://127.0.0.1:8080/v1', DH_MODEL: 'qwen' };
    expect(readWorkerConfig(local)).toMatchObject({ provider: 'llamacpp', model: 'qwen', apiKeyEnv: undefined });
  });

  it('an unknown provider without DH_BASE_URL names DH_PROVIDER, its value, the choices and what is missing', () => {
    const error = configError({ DH_PROVIDER: 'LlamaCpp' });
    expect(error.message).toBe(
      'invalid configuration: DH_PROVIDER="LlamaCpp" is not a built-in provider (deepseek, openai), so it names ' +
        'a generic OpenAI-compatible endpoint, which needs DH_BASE_URL and DH_MODEL (not set), and a DH_PROVIDER ' +
        'name of lowercase letters, digits, "_" and "-", at most 64 (e.g. "llamacpp")',
    );
    expect(error.details).toEqual({ variable: 'DH_BASE_URL', value: 'LlamaCpp', missing: 'DH_BASE_URL,DH_MODEL' });
  });

  it('names the one setting a generic endpoint lacks', () => {
    const noModel = configError({ DH_PROVIDER: 'llamacpp', DH_BASE_URL: 'http://127.0.0.1:8080/v1' });
    expect(noModel.message).toMatch(/, which needs DH_MODEL \(not set\)$/);
    expect(noModel.message).not.toContain('DH_BASE_URL');
    expect(noModel.details).toMatchObject({ variable: 'DH_MODEL', missing: 'DH_MODEL' });
    const noUrl = configError({ DH_PROVIDER: 'llamacpp', DH_MODEL: 'qwen' });
    expect(noUrl.message).toMatch(/, which needs DH_BASE_URL \(not set\)$/);
    const badName = configError({ DH_PROVIDER: 'Llama.Cpp', DH_BASE_URL: 'http://127.0.0.1:8080/v1', DH_MODEL: 'q' });
    expect(badName.message).toMatch(/which needs a DH_PROVIDER name of lowercase .* \(e\.g\. "llama-cpp"\)$/);
    expect(badName.details).toEqual({ variable: 'DH_PROVIDER', value: 'Llama.Cpp' });
  });

  it('a built-in name in the wrong case is refused with the name it resembles', () => {
    expect(configError({ DH_PROVIDER: 'DeepSeek' }).message).toBe(
      'invalid configuration: DH_PROVIDER="DeepSeek" is not a provider: the built-in ones are deepseek, openai ' +
        '(did you mean "deepseek"?)',
    );
  });
});
