// The fleet controls' configuration: provider quotas (per profile), tenant quotas and cost caps, from
// DH_LIMITS (a JSON file, or the JSON itself) and the shorthands DH_RATE_LIMIT_RPM, DH_RATE_LIMIT_TPM,
// DH_RATE_LIMIT_CONCURRENT, DH_TENANT, DH_SESSION_COST_CAP_USD; validated up front, naming the variable.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { DhError } from '../core/errors.js';

const positive = z.number().positive();

export const QuotaConfig = z.strictObject({
  requestsPerMinute: positive.optional(),
  tokensPerMinute: positive.optional(),
  maxConcurrent: z.number().int().positive().optional(),
});
export type QuotaConfig = z.infer<typeof QuotaConfig>;

export const TenantConfig = z.strictObject({
  ...QuotaConfig.shape,
  /** What the tenant's sessions may spend together, in USD (every call reserves its worst case first). */
  costCapUsd: z.number().nonnegative().optional(),
});
export type TenantConfig = z.infer<typeof TenantConfig>;

export const LimitsFile = z.strictObject({
  /** Quotas by provider profile name (`deepseek`, `openai`, a generic profile's name). */
  providers: z.record(z.string().min(1), QuotaConfig).default({}),
  tenants: z.record(z.string().regex(/^[A-Za-z0-9._-]{1,100}$/), TenantConfig).default({}),
  session: z.strictObject({ costCapUsd: z.number().nonnegative().optional() }).default({}),
});
export type LimitsFile = z.infer<typeof LimitsFile>;

export interface FleetConfig {
  /** The worker's provider quota (its profile's entry, overridden by the DH_RATE_LIMIT_RPM etc.); empty: none. */
  readonly quota: QuotaConfig;
  readonly tenants: Readonly<Record<string, TenantConfig>>;
  /** DH_TENANT: the tenant this worker's sessions belong to (its quota and cap apply). */
  readonly tenant?: string;
  /** Per-session cost cap in USD (DH_SESSION_COST_CAP_USD or the file's `session.costCapUsd`). */
  readonly sessionCostCapUsd?: number;
}

const NUMBER_VARIABLES = {
  DH_RATE_LIMIT_RPM: 'requestsPerMinute',
  DH_RATE_LIMIT_TPM: 'tokensPerMinute',
  DH_RATE_LIMIT_CONCURRENT: 'maxConcurrent',
} as const;

/** Reads the fleet configuration for a worker of `profileName`. Throws INVALID_CONFIG naming the variable. */
export function readFleetConfig(
  profileName: string,
  env: NodeJS.ProcessEnv = process.env,
  readFile: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): FleetConfig {
  const file = limitsFile(env.DH_LIMITS, readFile);
  const quota: Record<string, number> = {};
  for (const [field, value] of Object.entries(file.providers[profileName] ?? {})) {
    if (value !== undefined) quota[field] = value;
  }
  for (const [variable, field] of Object.entries(NUMBER_VARIABLES)) {
    const raw = env[variable]?.trim();
    if (raw === undefined || raw === '') continue;
    const value = Number(raw);
    const whole = field === 'maxConcurrent';
    if (!Number.isFinite(value) || value <= 0 || (whole && !Number.isInteger(value))) {
      throw invalid(`${variable}: ${whole ? 'a whole number above 0' : 'a number above 0'}, got "${raw}"`, variable);
    }
    quota[field] = value;
  }
  const tenant = env.DH_TENANT?.trim();
  if (tenant !== undefined && tenant !== '' && !/^[A-Za-z0-9._-]{1,100}$/.test(tenant)) {
    throw invalid('DH_TENANT: letters, digits, dot, dash, underscore (at most 100)', 'DH_TENANT');
  }
  const cap = capFrom(env.DH_SESSION_COST_CAP_USD) ?? file.session.costCapUsd;
  return {
    quota,
    tenants: file.tenants,
    ...(tenant !== undefined && tenant !== '' ? { tenant } : {}),
    ...(cap !== undefined ? { sessionCostCapUsd: cap } : {}),
  };
}

/** Whether any control is configured (without one, no limiter is opened and steps pay nothing for it). */
export function fleetControlsOn(config: FleetConfig): boolean {
  const tenant = config.tenant !== undefined ? config.tenants[config.tenant] : undefined;
  return (
    Object.keys(config.quota).length > 0 ||
    config.sessionCostCapUsd !== undefined ||
    (tenant !== undefined && Object.keys(tenant).length > 0)
  );
}

function limitsFile(spec: string | undefined, readFile: (path: string) => string): LimitsFile {
  const text = spec?.trim();
  if (text === undefined || text === '') return LimitsFile.parse({});
  let json: unknown;
  const where = text.startsWith('{') ? 'DH_LIMITS' : `DH_LIMITS (${text})`;
  try {
    json = JSON.parse(text.startsWith('{') ? text : readFile(text));
  } catch (error) {
    throw invalid(`${where}: ${error instanceof Error ? error.message : String(error)}`, 'DH_LIMITS');
  }
  const parsed = LimitsFile.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalid(`${where}: ${issue?.path.join('.') || '(top)'}: ${issue?.message ?? 'invalid'}`, 'DH_LIMITS');
  }
  return parsed.data;
}

function capFrom(raw: string | undefined): number | undefined {
  const text = raw?.trim();
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) {
    throw invalid(
      `DH_SESSION_COST_CAP_USD: a number of US dollars, 0 or more, got "${text}"`,
      'DH_SESSION_COST_CAP_USD',
    );
  }
  return value;
}

function invalid(problem: string, variable: string): DhError {
  return new DhError('INVALID_CONFIG', `invalid configuration: ${problem}`, { variable });
}
