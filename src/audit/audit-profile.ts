// The provider profile the audit derives a request's wire body with, offline: the caller's profile when
// it names the header's provider, a built-in one, or else a generic profile built from the header alone.
import { deepFreeze } from '../core/deep-freeze.js';
import type { CallConfig } from '../core/request-header.js';
import { GENERIC_CONTEXT_WINDOW, isBuiltinProvider, modelEntry } from '../config/worker-profile.js';
import { BUILTIN_PROFILES, type ProviderProfile } from '../providers/provider-profiles.js';
import type { PrefixCacheMode } from '../providers/prefix-cache.js';

export type AuditProfileSource = 'given' | 'builtin' | 'generic';

export interface AuditProfile {
  readonly profile: ProviderProfile;
  readonly source: AuditProfileSource;
}

/**
 * A profile never shapes wire bytes (toWireBody: "the profile can only refuse"), so a profile that
 * refuses nothing the header records derives the same body the worker sent. A generic endpoint's
 * profile (base URL, key variable, model list) lives in the worker's configuration, not in the log;
 * offline, the audit stands in a permissive one built from the header's provider name and model: it
 * accepts that model, images, and the thinking field exactly when the header records one. It is built
 * as a plain frozen object, not through resolveProfile, so any recorded provider name derives. Whichever
 * profile it is, the model's window is the one the header records (`contextWindow`) when it records one.
 */
export function auditProfileFor(
  config: Readonly<CallConfig>,
  given?: ProviderProfile,
  contextWindow?: number,
): AuditProfile {
  // A given profile that refuses the recorded model (an endpoint that no longer lists it) would only refuse: the
  // request was sent, so it derives on the permissive profile below.
  if (
    given !== undefined &&
    given.name === config.provider &&
    (isBuiltinProvider(given.name) || modelEntry(given, config.model) !== undefined)
  ) {
    return { profile: withWindow(given, config.model, contextWindow), source: 'given' };
  }
  if (isBuiltinProvider(config.provider)) {
    return { profile: withWindow(BUILTIN_PROFILES[config.provider], config.model, contextWindow), source: 'builtin' };
  }
  const profile: ProviderProfile = deepFreeze({
    name: config.provider,
    baseURL: 'http://audit.invalid/v1',
    apiKeyEnv: 'DH_AUDIT_NO_KEY',
    thinkingField: config.thinking !== undefined,
    models: [
      { id: config.model, contextWindow: contextWindow ?? GENERIC_CONTEXT_WINDOW, vision: true, thinking: 'optional' },
    ],
    unlistedModels: 'refuse',
  });
  return { profile, source: 'generic' };
}

/** The profile with the window the header recorded for its model (the worker's, not the profile's guess). */
function withWindow(profile: ProviderProfile, model: string, contextWindow: number | undefined): ProviderProfile {
  const entry = modelEntry(profile, model);
  if (contextWindow === undefined || entry === undefined || entry.contextWindow === contextWindow) return profile;
  return deepFreeze({
    ...profile,
    models: [...profile.models.filter((m) => m.id !== model), { ...entry, contextWindow }],
  });
}

/** The prefix-cache rules a request is simulated under: OpenAI's for the openai profile, DeepSeek's otherwise. */
export function cacheModeFor(config: Readonly<CallConfig>): PrefixCacheMode {
  return config.provider === 'openai' ? 'openai' : 'deepseek';
}
