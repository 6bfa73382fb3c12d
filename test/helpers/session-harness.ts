// Scenario harness for vitest: the scenario runtime (test/helpers/scenario-runtime.ts) on the test
// run's Temporal dev server and prebuilt workflow bundle, provided by the global setup.
import { inject } from 'vitest';
import { startDevServer } from '../../src/local-stack/dev-server.js';
import { resolveTemporalCli } from '../../src/local-stack/temporal-cli.js';
import { startScenarioRuntime, type ScenarioRuntime, type ScenarioRuntimeOptions } from './scenario-runtime.js';

export {
  derivedBodies,
  expectProviderSawTheLog,
  scriptedProfile,
  SCENARIO_KEY_ENV as TEST_KEY_ENV,
  SCENARIO_MODEL as TEST_MODEL,
  SCENARIO_MODEL_2 as TEST_MODEL_2,
  waitForState,
  waitForTurnEnd,
} from './scenario-runtime.js';

export type Harness = ScenarioRuntime;

export interface HarnessOptions extends Omit<ScenarioRuntimeOptions, 'address' | 'namespace' | 'workflowBundlePath'> {
  /** Another Temporal server than the run's shared one (e.g. one started with special dynamic config). */
  readonly temporal?: { readonly address: string; readonly namespace: string };
}

export function startHarness(options: HarnessOptions): Promise<Harness> {
  const { temporal, ...rest } = options;
  return startScenarioRuntime({
    ...rest,
    address: temporal?.address ?? inject('temporalAddress'),
    namespace: temporal?.namespace ?? inject('temporalNamespace'),
    workflowBundlePath: inject('workflowBundlePath'),
  });
}

/**
 * A harness on a dev server of its own, started with `dynamicConfig` (e.g. an early continue-as-new
 * suggestion, which must not leak into the shared server); its `stop` stops both.
 */
export async function startHarnessOnOwnServer(
  dynamicConfig: Readonly<Record<string, string | number | boolean>>,
  options: Omit<HarnessOptions, 'temporal'>,
): Promise<Harness> {
  const server = await startDevServer({ cliPath: await resolveTemporalCli(), dynamicConfig });
  try {
    const h = await startHarness({ ...options, temporal: { address: server.address, namespace: server.namespace } });
    return {
      ...h,
      stop: async () => {
        await h.stop();
        await server.stop();
      },
    };
  } catch (error) {
    await server.stop();
    throw error;
  }
}
