// The fleet controls' configuration: the file and the shorthands, which wins, and errors that name the
// variable and the JSON path before anything starts.
import { describe, expect, it } from 'vitest';
import { fleetControlsOn, readFleetConfig } from '../../src/config/fleet-config.js';
import { FLEET_MODEL_CONCURRENCY, readWorkerConfig } from '../../src/config/worker-config.js';

const file = JSON.stringify({
  providers: { deepseek: { requestsPerMinute: 500, tokensPerMinute: 1_000_000 }, openai: { requestsPerMinute: 9 } },
  tenants: { acme: { requestsPerMinute: 100, costCapUsd: 20 } },
  session: { costCapUsd: 5 },
});

describe('readFleetConfig', () => {
  it("takes the worker's profile entry from DH_LIMITS (a path or the JSON), the shorthands winning", () => {
    const fromPath = readFleetConfig('deepseek', { DH_LIMITS: '/etc/dh/limits.json' }, (path) => {
      expect(path).toBe('/etc/dh/limits.json');
      return file;
    });
    expect(fromPath).toEqual({
      quota: { requestsPerMinute: 500, tokensPerMinute: 1_000_000 },
      tenants: { acme: { requestsPerMinute: 100, costCapUsd: 20 } },
      sessionCostCapUsd: 5,
    });
    const overridden = readFleetConfig('deepseek', {
      DH_LIMITS: file,
      DH_RATE_LIMIT_RPM: '60',
      DH_RATE_LIMIT_CONCURRENT: '4',
      DH_TENANT: 'acme',
      DH_SESSION_COST_CAP_USD: '0.5',
    });
    expect(overridden).toMatchObject({
      quota: { requestsPerMinute: 60, tokensPerMinute: 1_000_000, maxConcurrent: 4 },
      tenant: 'acme',
      sessionCostCapUsd: 0.5,
    });
    expect(fleetControlsOn(overridden)).toBe(true);
    expect(fleetControlsOn(readFleetConfig('deepseek', {}))).toBe(false);
  });

  it.each([
    [{ DH_RATE_LIMIT_RPM: 'fast' }, 'DH_RATE_LIMIT_RPM: a number above 0, got "fast"'],
    [{ DH_RATE_LIMIT_CONCURRENT: '2.5' }, 'DH_RATE_LIMIT_CONCURRENT: a whole number above 0'],
    [{ DH_SESSION_COST_CAP_USD: '-1' }, 'DH_SESSION_COST_CAP_USD: a number of US dollars'],
    [{ DH_TENANT: 'a b' }, 'DH_TENANT: letters, digits'],
    [
      { DH_LIMITS: '{"providers":{"deepseek":{"requestsPerMinute":0}}}' },
      'DH_LIMITS: providers.deepseek.requestsPerMinute',
    ],
    [{ DH_LIMITS: '{"provider":{}}' }, 'DH_LIMITS: (top)'],
    [{ DH_LIMITS: '{not json' }, 'DH_LIMITS: '],
  ])('refuses %j naming it', (env, message) => {
    let error: unknown;
    try {
      readFleetConfig('deepseek', env);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'INVALID_CONFIG' });
    expect((error as Error).message).toContain(message);
  });

  it('gives a worker with a fleet quota many model slots (they wait in the limiter), unless set', () => {
    const base = { DEEPSEEK_API_KEY: 'x' };
    expect(readWorkerConfig(base).modelConcurrency).toBe(16);
    expect(readWorkerConfig({ ...base, DH_RATE_LIMIT_RPM: '60' }).modelConcurrency).toBe(FLEET_MODEL_CONCURRENCY);
    expect(readWorkerConfig({ ...base, DH_RATE_LIMIT_RPM: '60', DH_MODEL_CONCURRENCY: '8' }).modelConcurrency).toBe(8);
  });
});
