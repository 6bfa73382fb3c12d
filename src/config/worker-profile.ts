// The provider profile a worker runs with, defined once for the worker, the CLI and the operator commands:
// a built-in profile (deepseek, openai) with the configured base URL and key variable, or a generic
// OpenAI-compatible endpoint that knows the configured model and the models the endpoint says it serves. Also
// what dh assumes of a generic endpoint's model when nobody says otherwise: its context window and output limit.
import {
  resolveProfile,
  type ModelCapabilities,
  type ModelInfo,
  type ProviderProfile,
} from '../providers/provider-profiles.js';
import { ConfigErrorCode, type WorkerConfig } from './worker-config.js';
import { DhError } from '../core/errors.js';

/** The window assumed for a generic endpoint's model when neither DH_CONTEXT_WINDOW nor the server says. */
export const GENERIC_CONTEXT_WINDOW = 128_000;

/**
 * The output limit a generic endpoint's requests carry without DH_MAX_TOKENS, so a model that loops stops
 * within minutes instead of generating until its context is full.
 */
export const GENERIC_MAX_TOKENS = 4_096;

/** One model a generic endpoint lists (`GET /v1/models`), with the window its entry reports, if any. */
export interface ServedModel {
  readonly id: string;
  readonly contextWindow?: number;
}

/** What the worker learnt from its endpoint at start: the configured model's window, the models it serves. */
export interface EndpointFacts {
  /** Replaces the configured model's window (DH_CONTEXT_WINDOW, or what the server reported). */
  readonly contextWindow?: number | undefined;
  /** The endpoint's model list; undefined when it has none (or nobody asked: the CLI's offline profile). */
  readonly served?: readonly ServedModel[] | undefined;
}

/** What a generic endpoint without a model list is assumed to serve under any id a request names. */
const GENERIC_UNLISTED: ModelCapabilities = { contextWindow: GENERIC_CONTEXT_WINDOW, vision: false, thinking: 'none' };

export function isBuiltinProvider(provider: string): provider is 'deepseek' | 'openai' {
  return provider === 'deepseek' || provider === 'openai';
}

/** A generic endpoint's model: text-only, no thinking field. */
export function genericModel(id: string, contextWindow: number = GENERIC_CONTEXT_WINDOW): ModelInfo {
  return { id, contextWindow, vision: false, thinking: 'none' };
}

/**
 * The worker's profile. `endpoint.contextWindow` (else DH_CONTEXT_WINDOW) replaces the configured model's
 * window; without it a built-in model keeps its listed window and a generic one gets GENERIC_CONTEXT_WINDOW.
 * A generic endpoint also knows each model it serves (with the window the server reported, else the generic
 * one) and refuses others; one without a model list accepts any id with the generic capabilities. A built-in
 * profile keeps its own rule (DeepSeek refuses ids it does not list, OpenAI assumes text-only 128K).
 * Throws what resolveProfile throws (a DhError naming the problem).
 */
export function workerProfile(config: WorkerConfig, endpoint: EndpointFacts = {}): ProviderProfile {
  const contextWindow = endpoint.contextWindow ?? config.contextWindow;
  const location = {
    ...(config.baseURL !== undefined ? { baseURL: config.baseURL } : {}),
    ...(config.apiKeyEnv !== undefined ? { apiKeyEnv: config.apiKeyEnv } : {}),
  };
  if (!isBuiltinProvider(config.provider)) {
    const served = (endpoint.served ?? [])
      .filter((m) => m.id !== config.model)
      .map((m) => genericModel(m.id, m.contextWindow));
    return resolveProfile(config.provider, {
      ...location,
      models: [genericModel(config.model, contextWindow), ...served],
      unlistedModels: endpoint.served === undefined ? GENERIC_UNLISTED : 'refuse',
    });
  }
  const profile = resolveProfile(config.provider, location);
  const entry = modelEntry(profile, config.model);
  // A model the profile refuses stays refused, at the first call, as without a window.
  if (contextWindow === undefined || entry === undefined) return profile;
  return resolveProfile(config.provider, { ...location, models: [{ ...entry, contextWindow }] });
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
  return genericMaxTokens(contextWindow);
}

/** A generic endpoint's default output limit for a model with this window: GENERIC_MAX_TOKENS, or a quarter. */
export function genericMaxTokens(contextWindow: number): number {
  return Math.min(GENERIC_MAX_TOKENS, Math.max(1, Math.floor(contextWindow / 4)));
}
