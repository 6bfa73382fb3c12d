// Scenario harness for vitest: the scenario runtime (test/helpers/scenario-runtime.ts) on the test
// run's Temporal dev server and prebuilt workflow bundle, provided by the global setup.
import { inject } from 'vitest';
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
