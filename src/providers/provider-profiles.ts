// Provider profiles: where a provider lives (base URL, key env var) and what each model can take
// (context window, images, thinking). A profile never shapes wire bytes; it only lets toWireBody refuse
// a request the model cannot take, before anything is sent.
import { z } from 'zod';
import { deepFreeze } from '../core/deep-freeze.js';
import { DhError } from '../core/errors.js';
import { PROFILE_NAME, PROFILE_NAME_RULE } from './profile-name.js';
import { ProviderError, ProviderErrorCode } from './provider-error.js';

/**
 * How a model thinks:
 * - `none`: no thinking mode.
 * - `optional`: off unless the request enables it.
 * - `default-on`: the provider thinks unless told not to, so a request must record `thinking` explicitly
 *   (otherwise the body would not say which mode produced the answer).
 * - `always`: always thinks; a profile with a thinking field requires `thinking: 'enabled'` to be recorded.
 */
export const ThinkingCapability = z.enum(['none', 'optional', 'default-on', 'always']);
export type ThinkingCapability = z.infer<typeof ThinkingCapability>;

export const ModelCapabilities = z.strictObject({
  /** Total context window in tokens (input + output). */
  contextWindow: z.number().int().positive(),
  maxOutputTokens: z.number().int().positive().optional(),
  /** Accepts `image_url` content parts. */
  vision: z.boolean(),
  thinking: ThinkingCapability,
  /** Set when the provider has announced the id's retirement (free text: date or note). */
  deprecated: z.string().optional(),
});
export type ModelCapabilities = z.infer<typeof ModelCapabilities>;

export const ModelInfo = z.strictObject({ id: z.string().min(1), ...ModelCapabilities.shape });
export type ModelInfo = z.infer<typeof ModelInfo>;

export const ProviderProfile = z
  .strictObject({
    name: z.string().regex(PROFILE_NAME, `profile names are ${PROFILE_NAME_RULE}`),
    /** OpenAI-compatible base URL; the SDK appends `/chat/completions`. */
    baseURL: z.url({ protocol: /^https?$/ }),
    /** Name of the environment variable holding the key (the key itself never enters a profile). */
    apiKeyEnv: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'apiKeyEnv is an environment variable name'),
    /**
     * The variable may be unset: then no Authorization header is sent. Only for a generic endpoint whose
     * key variable nobody named (local servers such as llama-server, Ollama or LM Studio need no key).
     */
    apiKeyOptional: z.boolean().optional(),
    /**
     * The provider understands the DeepSeek-style `thinking: {type}` body field and `reasoning_content` on
     * assistant messages. Without it, `config.thinking` is refused and reasoning is never sent back.
     */
    thinkingField: z.boolean(),
    /**
     * A 200 answer whose event stream closes before a single byte is a refused request that is too long
     * for the model's context: llama-cpp-python's server refuses a streamed over-long prompt that way (the
     * error is only in its own log). Set for generic endpoints; a built-in provider's empty stream is a
     * glitch, retried.
     */
    emptyStreamIsOverflow: z.boolean().optional(),
    models: z.array(ModelInfo).min(1),
    /** Capabilities assumed for a model id not in `models`, or `refuse` to reject unknown ids. */
    unlistedModels: z.union([z.literal('refuse'), ModelCapabilities]),
  })
  .refine((p) => new Set(p.models.map((m) => m.id)).size === p.models.length, 'model ids must be unique');
export type ProviderProfile = z.infer<typeof ProviderProfile>;

/**
 * DeepSeek (facts from api-docs.deepseek.com, "Models & Pricing" and "Thinking Mode" pages as stored in
 * mid-2026): OpenAI-format base URL https://api.deepseek.com; the V4 models `deepseek-v4-flash` and
 * `deepseek-v4-pro` have a 1M-token context, at most 384K output tokens, and support both modes with thinking
 * ON by default (toggled by the body field `thinking: {type: enabled|disabled}`). The newest Chinese
 * pricing page lists `deepseek-flash` (DeepSeek-V4.1-Flash) with image understanding, while
 * `deepseek-v4-pro` has none; older `deepseek-v4-flash` still answers (served by V4.1-Flash), but it is
 * kept text-only here because the English page lists text input only. The legacy ids `deepseek-chat` and
 * `deepseek-reasoner` are the non-thinking and thinking modes of V4 Flash, announced for retirement on
 * 2026-07-24.
 */
const DEEPSEEK: ProviderProfile = {
  name: 'deepseek',
  baseURL: 'https://api.deepseek.com',
  apiKeyEnv: 'DEEPSEEK_API_KEY',
  thinkingField: true,
  models: [
    {
      id: 'deepseek-v4-flash',
      contextWindow: 1_000_000,
      maxOutputTokens: 384_000,
      vision: false,
      thinking: 'default-on',
    },
    {
      id: 'deepseek-v4-pro',
      contextWindow: 1_000_000,
      maxOutputTokens: 384_000,
      vision: false,
      thinking: 'default-on',
    },
    { id: 'deepseek-flash', contextWindow: 1_000_000, maxOutputTokens: 384_000, vision: true, thinking: 'default-on' },
    {
      id: 'deepseek-chat',
      contextWindow: 1_000_000,
      maxOutputTokens: 384_000,
      vision: false,
      thinking: 'none',
      deprecated: '2026-07-24 (non-thinking mode of deepseek-v4-flash)',
    },
    {
      id: 'deepseek-reasoner',
      contextWindow: 1_000_000,
      maxOutputTokens: 384_000,
      vision: false,
      thinking: 'always',
      deprecated: '2026-07-24 (thinking mode of deepseek-v4-flash)',
    },
  ],
  unlistedModels: 'refuse',
};

/**
 * OpenAI: reasoning models think internally and never return reasoning text in chat completions, and the
 * API has no `thinking` field (`reasoning_effort` is the knob), so `thinkingField` is false. Unlisted ids
 * are allowed (OpenAI ships many) but assumed text-only.
 */
const OPENAI: ProviderProfile = {
  name: 'openai',
  baseURL: 'https://api.openai.com/v1',
  apiKeyEnv: 'OPENAI_API_KEY',
  thinkingField: false,
  models: [
    { id: 'gpt-4o', contextWindow: 128_000, maxOutputTokens: 16_384, vision: true, thinking: 'none' },
    { id: 'gpt-4o-mini', contextWindow: 128_000, maxOutputTokens: 16_384, vision: true, thinking: 'none' },
    { id: 'gpt-4.1', contextWindow: 1_047_576, maxOutputTokens: 32_768, vision: true, thinking: 'none' },
    { id: 'gpt-4.1-mini', contextWindow: 1_047_576, maxOutputTokens: 32_768, vision: true, thinking: 'none' },
    { id: 'o4-mini', contextWindow: 200_000, maxOutputTokens: 100_000, vision: true, thinking: 'always' },
  ],
  unlistedModels: { contextWindow: 128_000, vision: false, thinking: 'none' },
};

export const BUILTIN_PROFILES: Readonly<Record<'deepseek' | 'openai', ProviderProfile>> = {
  deepseek: DEEPSEEK,
  openai: OPENAI,
};

/** What a caller may change on a built-in profile, or must give for a generic one. */
export interface ProfileOverrides {
  baseURL?: string;
  apiKeyEnv?: string;
  thinkingField?: boolean;
  /** Added to the profile's models; an entry with an existing id replaces it. */
  models?: readonly ModelInfo[];
  unlistedModels?: 'refuse' | ModelCapabilities;
}

export const ProfileErrorCode = { InvalidProfile: 'INVALID_PROFILE' } as const;

/** The variable a generic endpoint's key is read from when no `apiKeyEnv` is given; it may be unset. */
export const GENERIC_API_KEY_ENV = 'DH_API_KEY';

/**
 * `deepseek` and `openai` are built in (overrides adjust them, e.g. a test server's base URL); any other
 * name is a generic OpenAI-compatible profile and needs `baseURL` and `models`. A generic profile without
 * `apiKeyEnv` reads GENERIC_API_KEY_ENV and sends no key when it is unset. The result is validated and frozen.
 */
export function resolveProfile(name: string, overrides: ProfileOverrides = {}): ProviderProfile {
  const builtin = name === 'deepseek' || name === 'openai' ? BUILTIN_PROFILES[name] : undefined;
  let candidate: unknown;
  if (builtin) {
    candidate = {
      ...builtin,
      ...pickDefined(overrides),
      models: mergeModels(builtin.models, overrides.models ?? []),
    };
  } else {
    const missing = [
      ...(overrides.baseURL === undefined ? ['baseURL'] : []),
      ...(overrides.models?.length ? [] : ['models']),
    ];
    if (missing.length > 0) {
      throw new DhError(
        ProfileErrorCode.InvalidProfile,
        `profile "${name}" is not built in (${Object.keys(BUILTIN_PROFILES).join(', ')}): a generic profile ` +
          `needs baseURL and at least one model (missing: ${missing.join(', ')})`,
        { profile: name, missing: missing.join(',') },
      );
    }
    candidate = {
      name,
      baseURL: overrides.baseURL,
      apiKeyEnv: overrides.apiKeyEnv ?? GENERIC_API_KEY_ENV,
      ...(overrides.apiKeyEnv === undefined ? { apiKeyOptional: true } : {}),
      thinkingField: overrides.thinkingField ?? false,
      emptyStreamIsOverflow: true,
      models: mergeModels([], overrides.models ?? []),
      unlistedModels: overrides.unlistedModels ?? 'refuse',
    };
  }
  const parsed = ProviderProfile.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue ? `${issue.path.join('.') || 'profile'}: ${issue.message}` : 'invalid';
    throw new DhError(ProfileErrorCode.InvalidProfile, `profile "${name}" is invalid: ${where}`, { profile: name });
  }
  deepFreeze(parsed.data);
  return parsed.data;
}

/** A generic OpenAI-compatible profile (shorthand for resolveProfile with a non-built-in name). */
export function genericProfile(options: {
  name: string;
  baseURL: string;
  apiKeyEnv?: string;
  models: readonly ModelInfo[];
  thinkingField?: boolean;
  unlistedModels?: 'refuse' | ModelCapabilities;
}): ProviderProfile {
  const { name, ...rest } = options;
  return resolveProfile(name, rest);
}

/** The capabilities of `modelId` on `profile`; refuses ids the profile does not accept. */
export function modelInfo(profile: ProviderProfile, modelId: string): ModelInfo {
  const listed = profile.models.find((m) => m.id === modelId);
  if (listed) return listed;
  if (profile.unlistedModels === 'refuse') {
    throw new ProviderError(
      ProviderErrorCode.UnsupportedRequest,
      `model "${modelId}" is not in profile "${profile.name}" (known: ${profile.models.map((m) => m.id).join(', ')})`,
      { details: { profile: profile.name, model: modelId } },
    );
  }
  return { id: modelId, ...profile.unlistedModels };
}

/**
 * Reads the profile's key from the environment. The error names the variable, never a value. An optional
 * key that is unset is '' (callModel then sends no Authorization header).
 */
export function apiKeyFromEnv(profile: ProviderProfile, env: NodeJS.ProcessEnv = process.env): string {
  const key = env[profile.apiKeyEnv];
  if (key === undefined || key.trim() === '') {
    if (profile.apiKeyOptional === true) return '';
    throw new ProviderError(
      ProviderErrorCode.Auth,
      `no API key: set the environment variable ${profile.apiKeyEnv} for profile "${profile.name}"`,
      { details: { profile: profile.name, apiKeyEnv: profile.apiKeyEnv } },
    );
  }
  return key;
}

function mergeModels(base: readonly ModelInfo[], extra: readonly ModelInfo[]): ModelInfo[] {
  const byId = new Map<string, ModelInfo>();
  for (const m of base) byId.set(m.id, m);
  for (const m of extra) byId.set(m.id, m);
  return [...byId.values()];
}

function pickDefined(overrides: ProfileOverrides): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (overrides.baseURL !== undefined) out.baseURL = overrides.baseURL;
  if (overrides.apiKeyEnv !== undefined) out.apiKeyEnv = overrides.apiKeyEnv;
  if (overrides.thinkingField !== undefined) out.thinkingField = overrides.thinkingField;
  if (overrides.unlistedModels !== undefined) out.unlistedModels = overrides.unlistedModels;
  return out;
}
