// What one turn keeps while it runs, beyond the session state: its budgets and its compaction rounds.

export interface TurnProgress {
  readonly turn: number;
  /** Workflow time the turn started, for `maxTurnMs`. */
  readonly startedAt: number;
  /** Tokens its model steps used so far. */
  tokens: number;
  /** Whether the turn is open in the log: the next model step starts it until then, a budget refusal opens it. */
  started: boolean;
  /** A context overflow was compacted once; a second one fails the turn. */
  overflowed: boolean;
  /** Compactions for context pressure since the last answer: prune, then summarize, then send regardless. */
  pressureRounds: number;
}

export function turnProgress(turn: number, startedAt: number): TurnProgress {
  return { turn, startedAt, tokens: 0, started: false, overflowed: false, pressureRounds: 0 };
}
