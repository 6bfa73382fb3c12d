// The session workflow's input: its id, limits, and — on continue-as-new — the state carried over.
import type { DelegationLink, IngressMessage, LoopInstance, QueuedRef } from './activity-contracts.js';
import type { SessionStateView } from './session-messages.js';
import type { SessionLimits } from './session-limits.js';
import type { AgentOverrides } from '../core/agent-fields.js';

export { DEFAULT_LIMITS, type SessionLimits } from './session-limits.js';

/** Everything a continued run needs: cursors, queues, the wake latch, recent ids. Never the transcript. */
export interface SessionCarry {
  readonly head: number;
  readonly lastTurn: number;
  readonly queue: readonly QueuedRef[];
  readonly ingress: readonly IngressMessage[];
  readonly wakeLatched: boolean;
  readonly recentMessageIds: readonly string[];
  readonly instance: LoopInstance;
  readonly closing: boolean;
  readonly sessionSteps: number;
  readonly sessionTokens: number;
  readonly rejectedSignals: number;
  readonly continuedRuns: number;
  /** The worker host holding the session's workspace (tool steps run on its task queue). */
  readonly hostTaskQueue?: string;
  /** An accepted `compact` update not yet acted on (the hand-over must not drop it). */
  readonly compactRequested?: 'summary' | 'prune';
  // What the `state` query reports about the whole session, so a continued run does not forget it.
  // Optional: carries written before these existed lack them, and the run starts them fresh (as it did).
  // Decisions never read them, so they change no command. Small by construction: numbers and short strings.
  /** How the last turn ended (absent: no turn has ended yet, or an older carry). */
  readonly lastTurnEnd?: NonNullable<SessionStateView['lastTurnEnd']>;
  /** Token usage summed over every model step of the session. */
  readonly usage?: SessionStateView['usage'];
  /** Compactions applied over the session. */
  readonly compactions?: number;
  /** The last refused signal and why (bounded in length by the workflow). */
  readonly lastRejection?: string;
  /** The turns the latest messages landed in (`messageStatus`'s `turn`), oldest first, at most 64. */
  readonly landedTurns?: readonly (readonly [messageId: string, turn: number])[];
  /** The latest turn ends, oldest first, at most 16 (the state view's `recentTurnEnds`). */
  readonly recentTurnEnds?: readonly NonNullable<SessionStateView['lastTurnEnd']>[];
  /** The limits the session's agent sets (openSession read them); the input's own limits win over them. */
  readonly agentLimits?: Partial<SessionLimits>;
}

export interface SessionWorkflowInput {
  readonly sessionId: string;
  /**
   * The agent a new session runs (one the workers serve: `dh agents ls`); absent: the workers' default agent.
   * Read once, when the log is created; a session keeps its agent.
   */
  readonly agent?: string;
  /** The new session's overrides of its agent's definition, logged right after its start. */
  readonly overrides?: AgentOverrides;
  readonly limits?: Partial<SessionLimits>;
  readonly carry?: SessionCarry;
  /** A subagent (started by its parent's workflow): it runs its task's turn, then completes. */
  readonly delegation?: DelegationLink;
}

export interface SessionWorkflowResult {
  readonly sessionId: string;
  readonly head: number;
  readonly turns: number;
  readonly closedBy: string;
}

/**
 * The session workflow's signature, for typed client handles: clients name it instead of importing the
 * workflow function, so the client package compiles without the workflow code and what it imports.
 */
export type SessionWorkflow = (input: SessionWorkflowInput) => Promise<SessionWorkflowResult>;
