// The failure columns of a chaos trial, and the tally the checks add to: one count and one line per
// problem, so a run's table and its problem list always agree.
import type { EventOf, SessionEvent } from '../../../src/core/index.js';

export interface TrialCounts {
  /** Accepted messages missing from the log, or enqueued and then neither claimed nor still queued; a delegation call without its child. */
  lost: number;
  /** A message claimed twice, an event key twice, a seq gap, a second answer or request for a step, a non-idempotent tool run twice; a second child for a call. */
  duplicated: number;
  /** A tool call without a result, a step, turn or compaction left open; a child not linked both ways, or no call's. */
  dangling: number;
  /** A recorded digest that does not re-derive, a body the provider got that no log explains, a gate refusal. */
  gate: number;
  /** checkHistoryMirror disagreed (or could not run). */
  mirror: number;
  /** auditSession failed (counted only where src/audit/audit-session.ts exists). */
  audit: number;
}

export const ZERO_COUNTS: TrialCounts = { lost: 0, duplicated: 0, dangling: 0, gate: 0, mirror: 0, audit: 0 };

export class Tally {
  readonly counts: TrialCounts = { ...ZERO_COUNTS };
  readonly problems: string[] = [];
  /** Turns that ended with an error (not a gate refusal): not a column of their own, but a problem. */
  turnErrors = 0;

  /** Counts one problem; `where` names the session when it is not the trial's own (a child). */
  count(column: keyof TrialCounts, problem: string, where = ''): void {
    this.counts[column]++;
    this.problems.push(`${column}: ${where}${problem}`);
  }

  turnError(problem: string, where = ''): void {
    this.turnErrors++;
    this.problems.push(`${where}${problem}`);
  }
}

export const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T): EventOf<T>[] =>
  events.filter((e): e is EventOf<T> => e.type === type);
