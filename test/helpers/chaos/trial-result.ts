// What one chaos trial reports (a run sums these into its tables), and how a trial's plan reads in logs.
import type { Failpoint } from '../../../src/activities/failpoints.js';
import { KILL_KINDS, type KillKind, type TrialPlan } from './chaos-plan.js';
import { ZERO_COUNTS, type TrialCounts } from './trial-counts.js';

export interface TrialResult {
  readonly plan: TrialPlan;
  readonly counts: TrialCounts;
  /** Kills that happened, by kind (a failpoint chain can kill twice). */
  readonly kills: Readonly<Record<KillKind, number>>;
  /** Failpoints that fired (from the workers' failpoint log), in order. */
  readonly hits: readonly Failpoint[];
  /** The trial could not finish (the session never settled, a worker misbehaved): a failure too. */
  readonly error: string | null;
  readonly problems: readonly string[];
  readonly turnErrors: number;
  readonly audited: boolean;
  readonly turns: number;
  /** Workflow runs of the session: 1 + its continue-as-new hand-overs. */
  readonly runs: number;
  readonly events: number;
  readonly messages: number;
  readonly durationMs: number;
  /** Delegation calls the session started (subagent trials; a retried first step may answer without). */
  readonly delegations: number;
  /** Children checked (their logs exist). */
  readonly children: number;
  /** Kills that landed while some child ran (between its first and its last event). */
  readonly childKills: number;
}

export function noKills(): Record<KillKind, number> {
  return Object.fromEntries(KILL_KINDS.map((k) => [k, 0])) as Record<KillKind, number>;
}

/** A trial that could not finish: its error is the failure; what it got to is reported as far as known. */
export function unfinishedResult(
  plan: TrialPlan,
  known: Pick<TrialResult, 'kills' | 'hits' | 'turns' | 'events' | 'messages' | 'durationMs'>,
  error: string,
): TrialResult {
  return {
    plan,
    ...known,
    counts: { ...ZERO_COUNTS },
    error,
    problems: [],
    turnErrors: 0,
    audited: false,
    runs: 0,
    delegations: 0,
    children: 0,
    childKills: 0,
  };
}

export function describePlan(plan: TrialPlan): string {
  if (!plan.subagents) return describeKill(plan);
  const fromChild = plan.childKillMs !== null ? ` or child +${plan.childKillMs} ms` : '';
  return `subagents, ${describeKill(plan)}${fromChild}`;
}

function describeKill(plan: TrialPlan): string {
  switch (plan.kind) {
    case 'failpoint':
      return `failpoint ${plan.failpoints.join(' → ')}`;
    case 'continue-as-new':
      return `continue-as-new +${plan.canDelayMs} ms`;
    case 'timer':
      return `timer @${plan.killAtMs} ms`;
    case 'dev-server':
      return `dev-server @${plan.killAtMs} ms, down ${plan.downMs} ms`;
    case 'pg-worker':
      return `pg-worker #${plan.victim + 1} @${plan.killAtMs} ms`;
  }
}
