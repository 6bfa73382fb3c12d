// The one-line label of a streaming step's token counts, shared by `dh chat` and the web console.
import type { StepCost, Usage } from '../core/event-fields.js';

/** "1,234 tokens · $0.0012": what a step has used so far (its cost only where the worker prices the model). */
export function usageLabel(usage: Usage, cost: StepCost | null): string {
  const tokens = usage.inputUncached + usage.cacheRead + usage.output;
  const spent = cost !== null ? ` · $${cost.usd < 1 ? cost.usd.toFixed(4) : cost.usd.toFixed(2)}` : '';
  return `${tokens.toLocaleString('en-US')} tokens${spent}`;
}
