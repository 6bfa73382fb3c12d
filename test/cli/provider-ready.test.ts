// Whether a command that starts a worker may go on without an API key: a generic endpoint with no key
// variable named needs none (the worker then sends no Authorization header); a named or built-in one does.
import { describe, expect, it } from 'vitest';
import { assertProviderReady, loadCliConfig } from '../../src/cli/cli-context.js';

const generic = { DH_PROVIDER: 'llamacpp', DH_BASE_URL: 'http://127.0.0.1:8080/v1', DH_MODEL: 'smollm2' };

describe('assertProviderReady', () => {
  it('lets a keyless generic endpoint through', async () => {
    await expect(assertProviderReady(loadCliConfig(generic), generic)).resolves.toBeUndefined();
  });

  it('refuses a named key variable that is unset, naming it', async () => {
    const env = { ...generic, DH_API_KEY_ENV: 'LLAMA_KEY' };
    await expect(assertProviderReady(loadCliConfig(env), env)).rejects.toMatchObject({
      code: 'MISSING_API_KEY',
      message: expect.stringContaining('set LLAMA_KEY') as unknown,
    });
    const withKey = { ...env, LLAMA_KEY: 'k' };
    await expect(assertProviderReady(loadCliConfig(withKey), withKey)).resolves.toBeUndefined();
  });

  it("refuses a built-in provider without its key, naming the provider's variable", async () => {
    const env = { DH_PROVIDER: 'deepseek' };
    await expect(assertProviderReady(loadCliConfig(env), env)).rejects.toMatchObject({
      code: 'MISSING_API_KEY',
      message: expect.stringContaining('set DEEPSEEK_API_KEY') as unknown,
    });
  });
});
