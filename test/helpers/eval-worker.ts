// A worker that serves `dh eval` runs against a harness's store: the "new model" side of an evaluation, with a
// scripted provider of its own, on a task queue of its own (the recording harness keeps its own worker).
import { inject } from 'vitest';
import type { SessionRuntime } from '../../src/activities/session-runtime.js';
import type { EvalJudge } from '../../src/eval/eval-judge.js';
import type { ToolDefinition } from '../../src/plugins/contracts.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import type { Script } from '../../src/scripted-provider/script.js';
import type { SessionStore } from '../../src/stores/session-store.js';
import { createSessionWorker } from '../../src/worker/create-session-worker.js';
import { defaultHeaderComposer } from '../../src/worker/default-header.js';
import { scriptedProfile, SCENARIO_MODEL, SCENARIO_MODEL_2 } from './scenario-runtime.js';

export interface EvalWorker {
  readonly provider: ScriptedProvider;
  readonly taskQueue: string;
  stop(): Promise<void>;
}

let counter = 0;

export async function startEvalWorker(options: {
  readonly store: SessionStore;
  readonly script: Script;
  readonly judges?: readonly EvalJudge[];
  /** The tools a continued turn may run (none when absent). */
  readonly tools?: readonly ToolDefinition[];
  readonly fleet?: Partial<Pick<SessionRuntime, 'pricing' | 'limiter'>>;
}): Promise<EvalWorker> {
  const provider = await startScriptedProvider({
    script: { models: [SCENARIO_MODEL, SCENARIO_MODEL_2], ...options.script },
  });
  const profile = scriptedProfile(provider.url);
  const taskQueue = `eval-${process.pid}-${++counter}-${Date.now()}`;
  const tools = new Map((options.tools ?? []).map((t) => [t.schema.name, t]));
  try {
    const worker = await createSessionWorker({
      address: inject('temporalAddress'),
      namespace: inject('temporalNamespace'),
      taskQueue,
      workflowBundlePath: inject('workflowBundlePath'),
      runtime: {
        store: options.store,
        profile,
        apiKey: 'sk-test-not-a-real-key',
        tools,
        composeHeader: defaultHeaderComposer({ config: { provider: profile.name, model: SCENARIO_MODEL }, tools }),
        idleTimeoutMs: 5_000,
        heartbeatMs: 500,
        ...(options.judges !== undefined ? { judges: options.judges } : {}),
        ...options.fleet,
      },
    });
    const running = worker.run();
    return {
      provider,
      taskQueue,
      stop: async () => {
        await worker.shutdown();
        await running;
        await provider.close();
      },
    };
  } catch (error) {
    await provider.close();
    throw error;
  }
}
