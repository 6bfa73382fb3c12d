// The provider profile a worker runs with, defined once for the worker, the CLI and the operator commands:
// a built-in profile (deepseek, openai) with the configured base URL and key variable, or a generic
// OpenAI-compatible endpoint that knows only the configured model. Also what dh assumes of a generic
// endpoint's model when nobody says otherwise: its context window and its output limit.
import { resolveProfile, type ModelInfo, type ProviderProfile } from '../providers/provider-profiles.js';
import { ConfigErrorCode, type WorkerConfig } from './worker-config.js';
import { DhError } from '../core/errors.js';

/** The window assumed for a generic endpoint's model when neither DH_CONTEXT_WINDOW nor the server says. */
export const GENERIC_CONTEXT_WINDOW = 128_000;

/**
 * The output limit a generic endpoint's requests carry without DH_MAX_TOKENS, so a model that loops stops
 * within minutes instead of generating until its context is full.
 */
export const GENERIC_MAX_TOKENS = 4_096;

export function isBuiltinProvider(provider: string): provider is 'deepseek' | 'openai' {
  return provider === 'deepseek' || provider === 'openai';
}

/** A generic endpoint's model: text-only, no thinking field. */
export function genericModel(id: string, contextWindow: number = GENERIC_CONTEXT_WINDOW): ModelInfo {
  return { id, contextWindow, vision: false, thinking: 'none' };
}

/**
 * The worker's profile. `contextWindow` (DH_CONTEXT_WINDOW, or what the server reported) replaces the
 * configured model's window; without it a built-in model keeps its listed window and a generic one gets
 * GENERIC_CONTEXT_WINDOW. Throws what resolveProfile throws (a DhError naming the problem).
 */
export function workerProfile(config: WorkerConfig, contextWindow = config.contextWindow): ProviderProfile {
  const endpoint = {
    ...(config.baseURL !== undefined ? { baseURL: config.baseURL } : {}),
    ...(config.apiKeyEnv !== undefined ? { apiKeyEnv: config.apiKeyEnv } : {}),
  };
  if (!isBuiltinProvider(config.provider)) {
    return resolveProfile(config.provider, { ...endpoint, models: [genericModel(config.model, contextWindow)] });
  }
  const profile = resolveProfile(config.provider, endpoint);
  const entry = modelEntry(profile, config.model);
  // A model the profile refuses stays refused, at the first call, as without a window.
  if (contextWindow === undefined || entry === undefined) return profile;
  return resolveProfile(config.provider, { ...endpoint, models: [{ ...entry, contextWindow }] });
}

/** What `profile` knows of `model` (listed, or its unlisted-model capabilities); undefined when it refuses it. */
export function modelEntry(profile: ProviderProfile, model: string): ModelInfo | undefined {
  const listed = profile.models.find((m) => m.id === model);
  if (listed !== undefined) return listed;
  return profile.unlistedModels === 'refuse' ? undefined : { id: model, ...profile.unlistedModels };
}

/**
 * The `max_tokens` the worker records in its headers: DH_MAX_TOKENS when set; for a generic endpoint
 * GENERIC_MAX_TOKENS, or a quarter of a smaller window (the prompt needs the rest); none for a built-in
 * model, whose provider applies its own limit. A configured limit above the window is refused.
 */
export function workerMaxTokens(config: WorkerConfig, contextWindow: number | undefined): number | undefined {
  if (config.maxTokens !== undefined) {
    if (contextWindow !== undefined && config.maxTokens > contextWindow) {
      throw new DhError(
        ConfigErrorCode,
        `invalid configuration: DH_MAX_TOKENS (${config.maxTokens}) exceeds the context window of ` +
          `model "${config.model}" (${contextWindow} tokens)`,
        { maxTokens: config.maxTokens, contextWindow },
      );
    }
    return config.maxTokens;
  }
  if (isBuiltinProvider(config.provider) || contextWindow === undefined) return undefined;
  return Math.min(GENERIC_MAX_TOKENS, Math.max(1, Math.floor(contextWindow / 4)));
}
