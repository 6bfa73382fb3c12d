// The audit of a session's costs: each answer's logged cost must be its logged usage at its logged price,
// re-derived here, so a cost nobody can explain (edited, or computed by a broken worker) is a failure.
import type { SessionEvent } from '../core/events.js';
import { costOf } from '../providers/pricing.js';

export interface CostCheck {
  /** Sum of the logged costs, in USD. */
  readonly usd: number;
  /** Answers that carry a cost. */
  readonly priced: number;
  /** Answers with usage but no cost (no price was known to the worker). */
  readonly unpriced: number;
  /** `T.S` of answers whose logged cost is not their usage at their price. */
  readonly mismatched: readonly string[];
}

export function auditCosts(events: readonly SessionEvent[]): CostCheck {
  let usd = 0;
  let priced = 0;
  let unpriced = 0;
  const mismatched: string[] = [];
  for (const event of events) {
    if (event.type !== 'assistant/message') continue;
    if (!event.cost) {
      if (event.usage) unpriced++;
      continue;
    }
    priced++;
    usd += event.cost.usd;
    if (!event.usage || costOf(event.usage, event.cost.price) !== event.cost.usd) {
      mismatched.push(`${event.turn}.${event.step}`);
    }
  }
  return { usd, priced, unpriced, mismatched };
}
