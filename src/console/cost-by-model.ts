// What a session's model steps cost, summed per model: tokens, the logged cost of the priced steps, how
// many steps had usage but no price, and the share of input the provider served from its cache.
import { addUsage, cacheReadShare, emptyUsage, type StepCost, type Usage } from '../core/index.js';
import type { ModelCost } from './console-api.js';

interface CostedStep {
  readonly model: string | null;
  readonly usage: Usage | null;
  readonly cost: StepCost | null;
}

/** Per model in order of first use; a step whose header named no model counts as `unknown`. */
export function costByModel(steps: readonly CostedStep[]): ModelCost[] {
  const byModel = new Map<string, { steps: number; usage: Usage; usd: number | null; unpricedSteps: number }>();
  for (const step of steps) {
    const model = step.model ?? 'unknown';
    const sum = byModel.get(model) ?? { steps: 0, usage: emptyUsage(), usd: null, unpricedSteps: 0 };
    sum.steps++;
    addUsage(sum.usage, step.usage);
    if (step.cost !== null) sum.usd = (sum.usd ?? 0) + step.cost.usd;
    else if (step.usage !== null) sum.unpricedSteps++;
    byModel.set(model, sum);
  }
  return [...byModel].map(([model, sum]) => ({ model, ...sum, cacheReadShare: cacheReadShare(sum.usage) }));
}
