// What a provider profile may be called. Kept apart from the profiles so the configuration can check
// DH_PROVIDER without loading the OpenAI SDK the profiles import.

/** Lowercase letters, digits, `_` and `-`, starting with a letter or digit, at most 64 characters. */
export const PROFILE_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export const PROFILE_NAME_RULE = 'lowercase letters, digits, "_" and "-", at most 64';
