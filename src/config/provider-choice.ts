// Which provider and model DH_PROVIDER, DH_BASE_URL and DH_MODEL select, or the one line that says which
// of them is wrong or missing (naming the variables, the value and the choices) before anything starts.
import { PROFILE_NAME, PROFILE_NAME_RULE } from '../providers/profile-name.js';

export interface ProviderSettings {
  readonly DH_PROVIDER?: string | undefined;
  readonly DH_BASE_URL?: string | undefined;
  readonly DH_MODEL?: string | undefined;
}

export type ProviderChoice =
  | { readonly ok: true; readonly provider: string; readonly model: string }
  | {
      readonly ok: false;
      readonly problem: string;
      readonly details: Readonly<Record<string, string>>;
    };

/**
 * `builtins` maps each built-in provider to its default model (its keys are the choices). Any other
 * DH_PROVIDER names a generic OpenAI-compatible endpoint: a valid profile name plus DH_BASE_URL and
 * DH_MODEL, since nothing else knows where it is or what it serves.
 */
export function chooseProvider(env: ProviderSettings, builtins: Readonly<Record<string, string>>): ProviderChoice {
  const provider = env.DH_PROVIDER ?? 'deepseek';
  const choices = Object.keys(builtins);
  const builtinModel = builtins[provider];
  if (builtinModel !== undefined) return { ok: true, provider, model: env.DH_MODEL ?? builtinModel };

  const near = choices.find((name) => name === provider.toLowerCase());
  if (near !== undefined) {
    return {
      ok: false,
      problem: `DH_PROVIDER="${provider}" is not a provider: the built-in ones are ${choices.join(', ')} (did you mean "${near}"?)`,
      details: { variable: 'DH_PROVIDER', value: provider },
    };
  }
  const missing = [
    ...(env.DH_BASE_URL === undefined ? ['DH_BASE_URL'] : []),
    ...(env.DH_MODEL === undefined ? ['DH_MODEL'] : []),
  ];
  const badName = !PROFILE_NAME.test(provider);
  if (missing.length === 0 && !badName && env.DH_MODEL !== undefined) {
    return { ok: true, provider, model: env.DH_MODEL };
  }
  const needs = [
    ...(missing.length > 0 ? [`${missing.join(' and ')} (not set)`] : []),
    ...(badName ? [`a DH_PROVIDER name of ${PROFILE_NAME_RULE} (e.g. "${suggestedName(provider)}")`] : []),
  ];
  return {
    ok: false,
    problem:
      `DH_PROVIDER="${provider}" is not a built-in provider (${choices.join(', ')}), so it names a generic ` +
      `OpenAI-compatible endpoint, which needs ${needs.join(', and ')}`,
    details: {
      variable: missing[0] ?? 'DH_PROVIDER',
      value: provider,
      ...(missing.length > 0 ? { missing: missing.join(',') } : {}),
    },
  };
}

function suggestedName(provider: string): string {
  const name = provider
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[-_]+/, '')
    .slice(0, 64);
  return name === '' ? 'local' : name;
}
