// The context window a header records and pressure reads: the worker's window for the header's model,
// except that a worker which only assumes the generic fallback keeps what the session already recorded;
// pressure reads the header's record first and the profile only for headers written before it.
import { describe, expect, it } from 'vitest';
import { headerContextWindow, withContextWindow, withDefaultMaxTokens } from '../../src/activities/context-window.js';
import type { SessionRuntime } from '../../src/activities/session-runtime.js';
import { genericMaxTokens, genericModel } from '../../src/config/worker-profile.js';
import type { RequestHeader } from '../../src/core/index.js';
import { genericProfile } from '../../src/providers/provider-profiles.js';

const profile = genericProfile({
  name: 'llama',
  baseURL: 'http://127.0.0.1:8080/v1',
  apiKeyEnv: 'LLAMA_KEY',
  models: [genericModel('local'), genericModel('other', 32_768)],
});
/** What the two functions read of a worker's runtime: its profile and whether its window is only assumed. */
const runtime = (assumed: boolean) =>
  ({ profile, ...(assumed ? { contextWindowAssumed: true } : {}) }) as unknown as SessionRuntime;
const header = (model: string, contextWindow?: number): RequestHeader => ({
  config: { provider: 'llama', model },
  ...(contextWindow !== undefined ? { contextWindow } : {}),
});

describe('the window a header records', () => {
  it("is the worker's window for the header's model", () => {
    expect(withContextWindow(runtime(false), header('local'), undefined).contextWindow).toBe(128_000);
    expect(withContextWindow(runtime(false), header('other'), undefined).contextWindow).toBe(32_768);
  });

  it('a configured or discovered window replaces the recorded one', () => {
    expect(withContextWindow(runtime(false), header('local'), header('local', 8192)).contextWindow).toBe(128_000);
  });

  it('an assumed window does not: the session keeps its recorded window for the same model', () => {
    expect(withContextWindow(runtime(true), header('local'), header('local', 8192)).contextWindow).toBe(8192);
    // Another model (a plugin switched it) is not that window's model.
    expect(withContextWindow(runtime(true), header('other'), header('local', 8192)).contextWindow).toBe(32_768);
    // Nothing recorded yet: the assumption is all there is.
    expect(withContextWindow(runtime(true), header('local'), header('local')).contextWindow).toBe(128_000);
  });

  it('a model the profile refuses gets none', () => {
    expect(withContextWindow(runtime(false), header('unknown'), undefined)).toEqual(header('unknown'));
  });
});

describe('the output limit a header records', () => {
  const withDefault = { profile, defaultMaxTokens: genericMaxTokens } as unknown as SessionRuntime;
  /** What nextHeader records for a composed header: its model's window, then that window's default limit. */
  const recorded = (composed: RequestHeader) =>
    withDefaultMaxTokens(withDefault, withContextWindow(withDefault, composed, undefined));

  it('is the default of the window of the model the header names, whichever model a plugin switched to', () => {
    expect(recorded(header('local')).config.maxTokens).toBe(4096);
    expect(recorded(header('other')).config.maxTokens).toBe(4096);
    const small = genericProfile({
      name: 'llama',
      baseURL: 'http://127.0.0.1:8080/v1',
      models: [genericModel('local'), genericModel('small', 6000)],
    });
    const runtime = { profile: small, defaultMaxTokens: genericMaxTokens } as unknown as SessionRuntime;
    const switched = withDefaultMaxTokens(
      runtime,
      withContextWindow(runtime, header('small'), header('local', 128_000)),
    );
    expect(switched).toEqual({ config: { provider: 'llama', model: 'small', maxTokens: 1500 }, contextWindow: 6000 });
  });

  it('a limit the config sets (DH_MAX_TOKENS, a plugin) is kept; a worker without a default adds none', () => {
    const set: RequestHeader = { config: { provider: 'llama', model: 'other', maxTokens: 777 } };
    expect(recorded(set).config.maxTokens).toBe(777);
    expect(withDefaultMaxTokens(runtime(false), header('other', 32_768)).config.maxTokens).toBeUndefined();
    // No window (a model the profile refuses): nothing to derive a limit from; the request is refused anyway.
    expect(recorded(header('unknown'))).toEqual(header('unknown'));
  });
});

describe('the window pressure reads', () => {
  it("is the header's record, else the profile's (headers written before it), else none", () => {
    expect(headerContextWindow(runtime(false), header('local', 8192))).toBe(8192);
    expect(headerContextWindow(runtime(false), header('local'))).toBe(128_000);
    expect(headerContextWindow(runtime(false), header('unknown'))).toBeUndefined();
  });
});
