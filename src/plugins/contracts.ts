// The contracts between the session activities and the code they call out to: tools (and their live
// progress), the pre-step decision, the approval gate and the model-call report. Plugins, tools and
// activities all name them from here, once; the workflow never sees them (they reach it only as logged
// events; tool progress never does).
import type { SessionEvent, ToolSchema, Usage, UserContent } from '../core/index.js';

/** A tool the model can call. `run` failures the model should see are results, not throws. */
export interface ToolDefinition {
  readonly schema: ToolSchema;
  /** Safe to run again after a crash that left its outcome unknown. */
  readonly idempotent: boolean;
  /** May run in parallel with other concurrency-safe calls of the same step (results are still logged in model order). */
  readonly concurrencySafe?: boolean;
  /**
   * Local and short (a file read, a search of the workspace): a step whose calls are all quick runs them in
   * the model step's activity when that worker hosts the session's workspace, one Temporal round trip
   * instead of two. Never set it on a tool that can run long or waits on a network (a shell command, a
   * remote server): it would hold a model-call slot while it runs.
   */
  readonly quick?: boolean;
  /**
   * Changes nothing outside its result (a read, a listing, a search). A step whose calls are all quick and
   * read-only logs their starts in one commit with their results: an attempt that dies first did nothing a
   * retry or the turn's repair ("not run") would misstate. Implies nothing about idempotence on its own.
   */
  readonly readOnly?: boolean;
  /** The delegation tool (src/tools/delegate.ts): the tool step hands its calls to the workflow as child sessions. */
  readonly delegation?: { readonly maxDepth: number };
  run(args: unknown, context: ToolContext): Promise<ToolOutput>;
}

export interface ToolContext {
  readonly sessionId: string;
  readonly callId: string;
  /** Absolute path of the session's workspace; tools must stay inside it. */
  readonly workspace: string;
  /** Aborted on interrupt (activity cancellation) or when the worker shuts down. */
  readonly signal: AbortSignal;
  /**
   * Reports how far the call is, for live viewers (`dh run`, `dh attach`) only: never logged, never
   * model-visible. Throttled per call (at most one update per 250 ms passes; the latest one waiting wins);
   * never throws, and a failed write never fails the call. Absent where no observer listens. A plain
   * function (no `this`): it may be handed on, e.g. as another library's progress callback.
   */
  readonly progress?: (update: ToolProgress) => void;
}

/** A running tool call's progress: `progress` units done, of `total` when known, with an optional note. */
export interface ToolProgress {
  readonly progress: number;
  readonly total?: number;
  readonly message?: string;
}

/** A tool call's progress as observers see it (after throttling). Never model-visible, never logged as an event. */
export interface ToolProgressReport extends ToolProgress {
  readonly callId: string;
  /** The tool's name. */
  readonly name: string;
  /** The tool activity's attempt (a retry after a crash is > 1): viewers drop what earlier attempts reported. */
  readonly attempt: number;
  /**
   * When Temporal scheduled that attempt, epoch milliseconds: it orders attempts where their numbers do not
   * (calls run in a model step, then again in a tool step activity whose attempt is 1).
   */
  readonly attemptScheduledAt?: number;
  /** Wall-clock time of the update, epoch milliseconds. */
  readonly at: number;
}

/** A model step waiting for the fleet limiter (live only, never logged): why, and how many calls are ahead. */
export interface LimiterWaitReport {
  readonly reason: 'rate-limit' | 'tenant-quota' | 'provider-backoff' | 'fair-share' | 'concurrency';
  /** Calls of the fleet ahead of this one (an estimate). */
  readonly ahead: number;
  /** Expected wait left, in milliseconds (0 when unknown). */
  readonly waitMs: number;
  /** The model activity's attempt. */
  readonly attempt: number;
  /** Wall-clock time of the report, epoch milliseconds. */
  readonly at: number;
}

export interface ToolOutput {
  readonly output: string;
  readonly status: 'ok' | 'error';
}

/** Where in the session a hook is called: the step, and the log so far (frozen; read-only). */
export interface StepContext {
  readonly sessionId: string;
  readonly turn: number;
  readonly step: number;
  readonly events: readonly SessionEvent[];
}

/** A queued message claimed for a step, as the pre-step decision sees it. */
export interface ClaimedMessage {
  readonly messageId: string;
  readonly origin: 'followup' | 'steer' | 'inject' | 'send';
  readonly source?: string;
  readonly content: UserContent;
}

/** The pre-step decision: enter the claimed batch (possibly edited; the edit is logged) or reject it. */
export type PreStepDecision =
  | { readonly decision: 'enter'; readonly messages?: readonly ClaimedMessage[] }
  | { readonly decision: 'reject'; readonly reason: string };

/** A tool call as the approval gate sees it. */
export interface ToolCallView {
  readonly callId: string;
  readonly name: string;
  /** The raw argument string the model produced. */
  readonly arguments: string;
}

/** The approval gate: allow / deny (the model sees a denied result) / ask (the call pauses for the `approve` update). */
export type ToolGate =
  | { readonly decision: 'allow' }
  | { readonly decision: 'deny'; readonly reason: string }
  | { readonly decision: 'ask'; readonly reason: string };

/** What an evaluator plugin (`policy` hook) is asked: a call the policy's rules would ask about. */
export interface PolicyQuestion extends StepContext {
  /** What the rules said (always `ask` when an evaluator is asked) and why. */
  readonly rules: { readonly by: 'rule' | 'default'; readonly rule?: string; readonly reason: string };
  /** Aborted when the policy's evaluator timeout passes. */
  readonly signal: AbortSignal;
}

/**
 * An evaluator's answer (e.g. an LLM classifier's). `ask`, a throw, a timeout, an answer of another shape
 * or a `confidence` below the policy's minimum all escalate to ask: an evaluator never allows by failing.
 */
export interface PolicyEvaluation {
  readonly decision: 'allow' | 'deny' | 'ask';
  readonly reason?: string;
  /** Named numbers the verdict records (a risk score, a classifier's logits). */
  readonly scores?: Readonly<Record<string, number>>;
  /** 0..1; absent counts as sure. */
  readonly confidence?: number;
}

/** Why a provider call was made: a session step, or the summary of a compaction. */
export type ModelCallPurpose = 'step' | 'compaction';

/** What one provider call did, for observers (metrics, traces). Never model-visible, never logged as an event. */
export interface ModelCallReport {
  readonly purpose: ModelCallPurpose;
  readonly provider: string;
  readonly model: string;
  /** The activity attempt that made the call (a retry after a crash or a retryable error is > 1). */
  readonly attempt: number;
  /** Wall-clock start, epoch milliseconds. */
  readonly startedAt: number;
  readonly durationMs: number;
  /** Time from the start to the first streamed delta; null when none arrived. */
  readonly firstDeltaMs: number | null;
  readonly outcome: 'ok' | 'interrupted' | 'error';
  /** The stable error code of a failed call (RATE_LIMITED, TIMEOUT, ...). */
  readonly errorCode: string | null;
  readonly usage: Usage | null;
}
