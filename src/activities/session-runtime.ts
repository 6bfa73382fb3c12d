// What the session activities need from the worker's composition root: the store, the provider, how
// the request header is composed, the pre-step policy and the tools. Plugins build this (worker.ts).
import type { BuiltRequest, RequestHeader, SessionEvent, ToolSchema, Usage, UserContent } from '../core/index.js';
import type { ModelDelta } from '../providers/call-model.js';
import type { ProviderProfile } from '../providers/provider-profiles.js';
import type { SessionCacheLimits } from './session-cache.js';
import type { SessionStore } from '../stores/session-store.js';

/** A tool the model can call. `run` failures the model should see are results, not throws. */
export interface ToolDefinition {
  readonly schema: ToolSchema;
  /** Safe to run again after a crash that left its outcome unknown. */
  readonly idempotent: boolean;
  /** May run in parallel with other concurrency-safe calls of the same step (results are still logged in model order). */
  readonly concurrencySafe?: boolean;
  run(args: unknown, context: ToolContext): Promise<ToolOutput>;
}

export interface ToolContext {
  readonly sessionId: string;
  readonly callId: string;
  /** Absolute path of the session's workspace; tools must stay inside it. */
  readonly workspace: string;
  /** Aborted on interrupt (activity cancellation) or when the worker shuts down. */
  readonly signal: AbortSignal;
}

export interface ToolOutput {
  readonly output: string;
  readonly status: 'ok' | 'error';
}

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

export interface StepContext {
  readonly sessionId: string;
  readonly turn: number;
  readonly step: number;
  readonly events: readonly SessionEvent[];
}

export type ToolGate =
  | { readonly decision: 'allow' }
  | { readonly decision: 'deny'; readonly reason: string }
  | { readonly decision: 'ask'; readonly reason: string };

export interface HeaderContext {
  readonly sessionId: string;
  readonly turn: number;
  readonly step: number;
  /** The log so far (frozen). */
  readonly events: readonly SessionEvent[];
  /** True on the first step of a loop instance: the session prefix may be composed now, once. */
  readonly firstOfInstance: boolean;
  /** The header in force, if any (its prefix is reused within an instance). */
  readonly current: RequestHeader | undefined;
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

export interface SessionRuntime {
  readonly store: SessionStore;
  readonly profile: ProviderProfile;
  /** Read from the environment by the worker; never logged, never in a payload. */
  readonly apiKey: string;
  /** Composes the header for a step. Within an instance the prefix must stay the recorded one. */
  composeHeader(context: HeaderContext): Promise<RequestHeader>;
  /** Sees the claimed batch before a step: enter (possibly edited; the edit is logged) or reject. */
  preStep?(batch: readonly ClaimedMessage[], context: StepContext): Promise<PreStepDecision>;
  readonly tools: ReadonlyMap<string, ToolDefinition>;
  /** The approval gate before each tool call; absent = allow everything. */
  toolBefore?(call: { callId: string; name: string; arguments: string }, context: StepContext): Promise<ToolGate>;
  /** Outbound observers: see the frozen request before the gate and may hand on another (which the gate refuses). */
  onRequest?(request: BuiltRequest, context: StepContext): BuiltRequest;
  /** Read-only stream observers; must not throw. */
  onStreamDelta?(delta: ModelDelta, context: StepContext): void;
  /** Read-only observers of each provider call after it returned or failed; must not throw. */
  onModelCall?(report: ModelCallReport, context: StepContext): void;
  /** Notices for the model after a step's tool results, logged as injected context. */
  afterTools?(context: StepContext): Promise<readonly { source: string; content: string }[]>;
  /** The idle watchdog of a model stream, in milliseconds. */
  readonly idleTimeoutMs: number;
  /** How often long activities heartbeat (also how fast they see an interrupt), in milliseconds. */
  readonly heartbeatMs: number;
  /** This worker host's tool task queue, handed to sessions opened here (set by createSessionWorker). */
  readonly hostTaskQueue?: string;
  /** The session's workspace directory on this host; default: `<tmpdir>/dh-workspaces/<sessionId>`. */
  workspaceFor?(sessionId: string): string;
  /** Bounds of the worker's session cache; default: 256 sessions, each dropped after 10 minutes idle. */
  readonly sessionCache?: SessionCacheLimits;
}
