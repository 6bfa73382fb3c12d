// Inputs and outputs of the session activities. They carry ids, seq cursors and digests — never the
// transcript — so the workflow history stays small and mirrors the log through receipts.
import type { AgentOverrides, InboxTarget, MessageOrigin, UserContent, Usage, TurnEndReason } from '../core/index.js';
import type { SessionLimits } from './session-limits.js';

/** One logged event as the workflow history records it. */
export interface Receipt {
  readonly seq: number;
  readonly type: string;
  readonly digest: string;
  /**
   * The store's chain digest of this row, on the last receipt of an outcome only (the chain head then;
   * it binds every row before it, and one per outcome keeps history small). Absent in histories recorded
   * before the chain, on a row written before it, and when the worker did not learn it.
   */
  readonly chain?: string;
}

/** Every append activity returns the receipts of all events in [knownHead, head). */
export interface AppendOutcome {
  readonly receipts: readonly Receipt[];
  readonly head: number;
}

/** A message received by a signal/update, waiting in workflow state to be logged as `inbox/enqueue`. */
export interface IngressMessage {
  readonly messageId: string;
  readonly target: InboxTarget;
  readonly wakeup: boolean;
  readonly origin: MessageOrigin;
  readonly source?: string;
  readonly content: UserContent;
  /** A waking next-step send that arrived while the turn was dying; logged with `inbox/downgrade`. */
  readonly downgraded: boolean;
  /** Workflow time of arrival, used as the event time. */
  readonly at: number;
}

/** The loop instance: one per start/resume/fork; a continue-as-new run keeps it. */
export interface LoopInstance {
  readonly id: string;
  /** Whether this instance already recorded its `request/header` (initial or resume). */
  readonly headerRecorded: boolean;
}

export interface OpenSessionInput {
  readonly sessionId: string;
  readonly at: number;
  /** A subagent's first open: its log starts with this delegation and its task (read from the parent's log). */
  readonly delegation?: DelegationLink;
  /** A new session's agent (the input's); absent: the worker's default. Ignored once the log exists. */
  readonly agent?: string;
  /** A new session's overrides, logged after its start. */
  readonly overrides?: AgentOverrides;
}

/** What links a child session to the call that delegated to it; ids and numbers only (never the task). */
export interface DelegationLink {
  readonly parentSessionId: string;
  readonly callId: string;
  readonly depth: number;
  /** The root of the tree, whose workspace every session in it shares. */
  readonly workspaceSessionId: string;
  /** The parent's tool host: the child's tool steps run where the shared workspace is. */
  readonly hostTaskQueue?: string;
}

/** A delegation call whose child the workflow must run (its `tool/start` names the child). */
export interface PendingDelegation {
  readonly callId: string;
  readonly childSessionId: string;
  readonly depth: number;
  readonly workspaceSessionId: string;
  /** The call's own limits (`max_steps`, `max_tokens`); the workflow caps them by what the parent has left. */
  readonly maxSteps?: number;
  readonly maxTokens?: number;
}

/** A child the workflow ran: its id, and why it ended without a result of its own (terminated, failed). */
export interface DelegatedChild {
  readonly callId: string;
  readonly childSessionId: string;
  readonly failure?: string;
}

export interface QueuedRef {
  readonly messageId: string;
  readonly target: InboxTarget;
  readonly wakeup: boolean;
  readonly downgraded: boolean;
}

/** A queued message's reference: what the workflow keeps of it (the content stays in the log). */
export function toQueuedRef(message: QueuedRef): QueuedRef {
  return {
    messageId: message.messageId,
    target: message.target,
    wakeup: message.wakeup,
    downgraded: message.downgraded,
  };
}

/**
 * How many recent message ids the workflow remembers for deduplication, and so how many an opening run
 * hands it (the store's unique index is the authority beyond that window).
 */
export const RECENT_MESSAGE_IDS = 2_000;

export interface OpenSessionOutcome extends AppendOutcome {
  /** The task queue of the worker host that holds this session's workspace (tool steps run there). */
  readonly hostTaskQueue?: string;
  /** Events appended by crash repair (0 when the log was clean). */
  readonly repaired: number;
  readonly lastTurn: number;
  /** Messages still queued in the log (rebuilt on resume). */
  readonly queue: readonly QueuedRef[];
  readonly messageIds: readonly string[];
  /**
   * What the log holds of the whole session so far (openSession only): a run that starts without a carry
   * (a resume after close, a fresh start over an existing log) counts budgets and reports state from it.
   */
  readonly totals?: SessionTotals;
  /** The limits the session's agent sets (absent: none, or a worker before agents). */
  readonly agentLimits?: Partial<SessionLimits>;
}

export interface SessionTotals {
  /** Model steps answered (assistant messages in the log). */
  readonly steps: number;
  readonly usage: Usage;
  readonly compactions: number;
  readonly lastTurnEnd: { readonly turn: number; readonly reason: string; readonly errorCode: string | null } | null;
}

export interface InboxInput {
  readonly sessionId: string;
  readonly knownHead: number;
  readonly ingress: readonly IngressMessage[];
}

/** configureSession's input: a session's new overrides (checked by the activity, against its agent and endpoint). */
export interface ConfigureSessionInput {
  readonly sessionId: string;
  readonly knownHead: number;
  /** Names the set (its log slot): a retry of the same update logs nothing twice. */
  readonly overridesId: string;
  /** As the caller sent them; the activity parses them. */
  readonly overrides: unknown;
  readonly source?: string;
  readonly at: number;
}

export interface ConfigureSessionOutcome extends AppendOutcome {
  /** The overrides now in force. */
  readonly overrides: AgentOverrides;
  /** False when they were in force already (nothing was logged). */
  readonly changed: boolean;
}

/** appendInbox's input: the ingress to log, and (at close) the queued messages no turn will claim. */
export interface AppendInboxInput extends InboxInput {
  /** Logged as one `inbox/discard` after the ingress: the ids still queued of these, with the reason. */
  readonly discard?: { readonly messageIds: readonly string[]; readonly reason: string };
}

export interface ModelStepInput extends InboxInput {
  readonly instance: LoopInstance;
  readonly turn: number;
  readonly step: number;
  /** Append `turn/start` first (the first step of a turn). */
  readonly startTurn: boolean;
  /** Message ids to claim for this step, in claim order. */
  readonly claim: readonly string[];
  readonly at: number;
  /** Compact first when the request would use more than this fraction of the context window. */
  readonly compactAt?: number;
  /**
   * The session's tool host queue: a worker that is that host runs the answer's calls in this activity when
   * every one is quick (tools-in-model-step.ts), and returns where the tool step stands as `tools`.
   */
  readonly toolHost?: string;
}

export interface ModelStepOutcome extends AppendOutcome {
  /**
   * `blocked`: the activity ended the turn (see `turnEnd`). `compact`: the
   * request would exceed the context-pressure threshold; nothing of the step was logged, the
   * workflow compacts and asks again.
   */
  readonly outcome: 'responded' | 'blocked' | 'compact';
  /**
   * How the activity ended the turn, when it did (`blocked`): the pre-step hook's rejection, `budget` when the
   * call would pass the cost cap, or (`blocked` at a turn's first step, `completed` later) nothing left to send
   * once the step's messages were discarded. Absent in results recorded before it (they were all rejections).
   */
  readonly turnEnd?: { readonly reason: 'blocked' | 'budget' | 'completed'; readonly errorCode: string | null };
  /** Ids of the tool calls the model made (their arguments stay in the log). */
  readonly toolCallIds: readonly string[];
  /** True when the step has no tool calls and the activity already appended `step/end`. */
  readonly stepEnded: boolean;
  readonly usage: Usage | null;
  /** True when the response was already in the log (a retry after a crash): no provider call. */
  readonly fromLog: boolean;
  /**
   * The answer's finish reason as logged (`length`: cut at its output limit). Absent in results recorded
   * before it was returned, and on answers that never came (`blocked`, `compact`).
   */
  readonly finishReason?: string | null;
  /** The answer's calls ran in this activity (see `toolHost`): the tool step's result, as `toolStep` returns it. */
  readonly tools?: ToolStepResult;
}

export interface ApprovalDecisionInput {
  readonly callId: string;
  readonly decision: 'approve' | 'deny' | 'timeout';
  readonly by?: string;
  readonly reason?: string;
  /** Log a session rule with the decision (see ApprovePayload.remember). */
  readonly remember?: 'tool' | 'call';
}

export interface ToolStepInput extends InboxInput {
  readonly turn: number;
  readonly step: number;
  readonly at: number;
  /** Decisions on calls that waited for approval (from the `approve` update or a timeout). */
  readonly decisions?: readonly ApprovalDecisionInput[];
  /** Children that ended, whose results this call logs (read from their logs). */
  readonly delegated?: readonly DelegatedChild[];
}

export interface PendingApproval {
  readonly callId: string;
  readonly name: string;
  readonly reason: string;
}

/**
 * Both fields are optional because tool-step results recorded before approvals and notices existed
 * lack them, and running sessions replay those results (docs/versioning.md).
 */
export interface ToolStepOutcome extends AppendOutcome, ToolStepResult {}

/** Where a tool step stands after an activity ran its calls: ended, or paused for a decision or children. */
export interface ToolStepResult {
  /** A call waits for a decision; the step continues when the workflow calls again with it. */
  readonly pendingApproval?: PendingApproval | null;
  /** Messages the step queued (plugin notices), for the workflow's queue. */
  readonly enqueued?: readonly QueuedRef[];
  /** Delegation calls whose children the workflow runs, then calls again with them (`delegated`). */
  readonly pendingDelegations?: readonly PendingDelegation[];
  /** What the children whose results this call logged spent (the parent's budgets count it). */
  readonly childUsage?: Usage;
}

export interface CloseTurnInput extends InboxInput {
  readonly turn: number;
  readonly reason: TurnEndReason;
  readonly error?: { readonly code: string; readonly message: string };
  readonly at: number;
  /**
   * A turn refused before it started (a spent session budget): open it and claim these waiting messages
   * for its first step, so the batch that woke the session is consumed (and visible) with the turn's end.
   */
  readonly refuse?: { readonly claim: readonly string[] };
  /** Children that ended while the turn was interrupted: their results are logged before the turn closes. */
  readonly delegated?: readonly DelegatedChild[];
}

/**
 * What closing a turn leaves: the queue as the log holds it. Results recorded before this type carry
 * `repaired: 0` and `messageIds: []` as well (closeTurn returned an OpenSessionOutcome); nothing read them.
 */
export interface CloseTurnOutcome extends AppendOutcome {
  readonly lastTurn: number;
  readonly queue: readonly QueuedRef[];
  /** What the children whose results this call logged spent. */
  readonly childUsage?: Usage;
}

export interface CompactInput extends InboxInput {
  readonly compactionId: string;
  readonly trigger: 'pressure' | 'manual' | 'overflow' | 'prune';
  /** Most recent turns kept verbatim. */
  readonly keepRecentTurns: number;
  /** Pruning: tool outputs longer than this are replaced by a stub. */
  readonly pruneMinChars: number;
  readonly at: number;
}

export interface CompactOutcome extends AppendOutcome {
  readonly outcome: 'applied' | 'abandoned';
  readonly tokensBefore: number;
  readonly tokensAfter: number;
}

export interface CloseStepInput extends InboxInput {
  readonly turn: number;
  readonly step: number;
  readonly error: { readonly code: string; readonly message: string };
  readonly at: number;
}
