// A session's limits (per turn and per session) and their defaults: the workflow's input, an agent's definition
// and the worker's answer about a session's agent all name them.
/** Per-turn and per-session limits. A turn that reaches one ends with `max-steps` or `budget`. */
export interface SessionLimits {
  readonly maxStepsPerTurn: number;
  readonly maxSessionSteps: number;
  readonly maxTurnTokens: number;
  readonly maxSessionTokens: number;
  /** Wall-clock budget of one turn, in milliseconds. */
  readonly maxTurnMs: number;
  /** How long a tool call waits for the `approve` update before it fails closed (denied), in milliseconds. */
  readonly approvalTimeoutMs: number;
  /** Compact when the next request would use more than this fraction of the context window (0 = never). */
  readonly compactAt: number;
  /** Turns kept verbatim by a compaction. */
  readonly keepRecentTurns: number;
  /** Pruning replaces older tool outputs longer than this many characters by a stub. */
  readonly pruneMinChars: number;
}

export const DEFAULT_LIMITS: SessionLimits = {
  maxStepsPerTurn: 50,
  maxSessionSteps: 100_000,
  maxTurnTokens: 5_000_000,
  maxSessionTokens: 500_000_000,
  maxTurnMs: 6 * 60 * 60 * 1000,
  approvalTimeoutMs: 10 * 60 * 1000,
  compactAt: 0.8,
  keepRecentTurns: 2,
  pruneMinChars: 2_000,
};
