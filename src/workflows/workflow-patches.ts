// The workflow's patches by id. A run started on code that knows the baseline takes every patch listed in it
// with one marker (and one TemporalChangeVersion upsert) instead of one of each per patch.
import { patched } from '@temporalio/workflow';

/**
 * Every patch that existed when the baseline was cut. Never edited: a later change gets a patch of its own
 * (asked with `patched()`), and a later baseline gets a new id.
 */
export const BASELINE_PATCHES = [
  'open-session-local',
  'ingress-logged-while-busy',
  'session-search-attributes',
  'tools-in-model-step',
  'model-step-on-host',
  'close-turn-local',
  'discard-queued-at-close',
  'subagent-children',
  'truncated-answer-ends-turn',
  'budget-refusal-consumes-batch',
  'content-limit-characters',
] as const;

export type BaselinePatch = (typeof BASELINE_PATCHES)[number];

/**
 * Patches after the baseline, each asked with its own `patched()` where it applies. Signals held since the
 * run's start are handled in arrival order (signals-in-arrival-order.ts).
 */
export const SIGNALS_IN_ARRIVAL_ORDER = 'signals-in-arrival-order';

/** The marker of a run that took every patch of BASELINE_PATCHES at its start. */
export const BASELINE_PATCH = 'baseline-2026-12';

/**
 * Asked once, synchronously, first thing in a run. A recorded run without the marker answers false for the
 * whole run (even after its replay ends), so its patches are asked one by one where they always were.
 */
export function askBaseline(): boolean {
  return patched(BASELINE_PATCH);
}

/** Whether this run takes the patched path: always since the baseline, else as the patch's own marker says. */
export function since(run: { readonly baseline: boolean }, id: BaselinePatch): boolean {
  return run.baseline || patched(id);
}
