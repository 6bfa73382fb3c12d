// The provider profile the audit derives a request's wire body with, offline: the caller's profile when
// it names the header's provider, a built-in one, or else a generic profile built from the header alone.
import { deepFreeze } from '../core/deep-freeze.js';
import type { CallConfig } from '../core/request-header.js';
import { BUILTIN_PROFILES, type ProviderProfile } from '../providers/provider-profiles.js';
import type { PrefixCacheMode } from '../scripted-provider/prefix-cache.js';

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
 * as a plain frozen object, not through resolveProfile, so any recorded provider name derives.
 */
export function auditProfileFor(config: Readonly<CallConfig>, given?: ProviderProfile): AuditProfile {
  if (given !== undefined && given.name === config.provider) return { profile: given, source: 'given' };
  if (config.provider === 'deepseek' || config.provider === 'openai') {
    return { profile: BUILTIN_PROFILES[config.provider], source: 'builtin' };
  }
  const profile: ProviderProfile = deepFreeze({
    name: config.provider,
    baseURL: 'http://audit.invalid/v1',
    apiKeyEnv: 'DH_AUDIT_NO_KEY',
    thinkingField: config.thinking !== undefined,
    models: [{ id: config.model, contextWindow: 1_000_000, vision: true, thinking: 'optional' }],
    unlistedModels: 'refuse',
  });
  return { profile, source: 'generic' };
}

/** The prefix-cache rules a request is simulated under: OpenAI's for the openai profile, DeepSeek's otherwise. */
export function cacheModeFor(config: Readonly<CallConfig>): PrefixCacheMode {
  return config.provider === 'openai' ? 'openai' : 'deepseek';
}
