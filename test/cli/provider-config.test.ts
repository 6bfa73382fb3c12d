// Provider settings through the real `dh` (child processes, temp DH_HOME): a wrong or missing DH_PROVIDER,
// DH_BASE_URL or DH_MODEL is one stderr line naming the variable, before anything starts.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv, describeRun, runDh, tempHome } from './operator-cli.js';

describe('dh refuses incomplete provider settings by name', { timeout: 120_000 }, () => {
  const home = tempHome('dh-cli-provider-');
  afterAll(() => home.cleanup());

  it('names DH_PROVIDER, its value and the choices, or the setting a generic endpoint lacks', async () => {
    const env = (extra: NodeJS.ProcessEnv) => cleanEnv({ DH_HOME: home.home, ...extra });
    const [unknown, noModel, noUrl, miscased] = await Promise.all([
      runDh(['run', 'hello'], env({ DH_PROVIDER: 'LlamaCpp' })),
      runDh(['run', 'hello'], env({ DH_PROVIDER: 'llamacpp', DH_BASE_URL: 'http://127.0.0.1:9/v1' })),
      runDh(['worker'], env({ DH_PROVIDER: 'llamacpp', DH_MODEL: 'qwen' })),
      runDh(['run', 'hello'], env({ DH_PROVIDER: 'OpenAI' })),
    ]);
    for (const result of [unknown, noModel, noUrl, miscased]) {
      expect(result.code, describeRun(result)).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr.split('\n')).toHaveLength(2); // one line and its newline
    }
    expect(unknown.stderr).toBe(
      'dh: invalid configuration: DH_PROVIDER="LlamaCpp" is not a built-in provider (deepseek, openai), so it ' +
        'names a generic OpenAI-compatible endpoint, which needs DH_BASE_URL and DH_MODEL (not set), and a ' +
        'DH_PROVIDER name of lowercase letters, digits, "_" and "-", at most 64 (e.g. "llamacpp")\n',
    );
    expect(noModel.stderr).toMatch(/DH_PROVIDER="llamacpp" is not a built-in .*, which needs DH_MODEL \(not set\)\n$/);
    expect(noUrl.stderr).toMatch(/DH_PROVIDER="llamacpp" is not a built-in .*, which needs DH_BASE_URL \(not set\)\n$/);
    expect(miscased.stderr).toContain('DH_PROVIDER="OpenAI" is not a provider: the built-in ones are deepseek, openai');
    expect(miscased.stderr).toContain('(did you mean "openai"?)');
    // Refused before the embedded stack was started.
    expect(existsSync(join(home.home, 'stack.json'))).toBe(false);
  });
});
