// The line `dh eval` prints on stderr whenever a run moves: steps done, steps sent and not answered yet ("in
// flight"), steps handed to the worker and not sent yet ("waiting"), and money only once some was spent.
import type { EvalProgress } from '../../shared/eval-contracts.js';

export type EvalProgressCounts = Pick<
  EvalProgress,
  'total' | 'done' | 'answered' | 'skipped' | 'failed' | 'spentUsd' | 'unpriced'
>;

/** `live`: the running steps split by whether their request was sent (absent once the run has ended). */
export function renderEvalProgress(p: EvalProgressCounts, live?: { sent: number; waiting: number }): string {
  const parts = [`${p.done}/${p.total} steps done (${p.answered} answered, ${p.skipped} skipped, ${p.failed} failed)`];
  if (live !== undefined) {
    parts.push(`${live.sent} in flight`);
    if (live.waiting > 0) parts.push(`${live.waiting} waiting`);
  }
  // $0.000000 would read as money that moved: nothing is said until something was spent.
  if (p.spentUsd > 0) parts.push(`$${p.spentUsd.toFixed(6)} spent`);
  if (p.unpriced > 0) parts.push(`cost unknown for ${p.unpriced} (no price for the model on the serving worker)`);
  return parts.join(', ');
}
