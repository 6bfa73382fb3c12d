// What the session activities need from the worker's composition root: the store, the provider, how
// the request header is composed, and the hooks (contracts in plugins/contracts.ts). Plugins build this
// (src/worker/default-plugins.ts).
import type { BuiltRequest, RequestHeader, SessionEvent } from '../core/index.js';
import type {
  ClaimedMessage,
  LimiterWaitReport,
  ModelCallReport,
  PreStepDecision,
  StepContext,
  ToolCallView,
  ToolDefinition,
  ToolGate,
  ToolProgressReport,
} from '../plugins/contracts.js';
import type { ModelDelta } from '../providers/call-model.js';
import type { ReadAttachment } from '../providers/wire-body.js';
import type { PricingTable } from '../providers/pricing.js';
import type { EvalJudge } from '../eval/eval-judge.js';
import type { ProviderProfile } from '../providers/provider-profiles.js';
import type { FleetLimiter } from '../limiter/fleet-limiter.js';
import type { SessionCacheLimits } from './session-cache.js';
import type { SessionStore } from '../stores/session-store.js';
import type { PolicyEngine } from '../policy/policy-engine.js';
import type { AgentDirectory } from '../agents/agent-directory.js';

// Not a second name: src/worker/default-header.ts still imports the tool contract from here.

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

export interface SessionRuntime {
  readonly store: SessionStore;
  readonly profile: ProviderProfile;
  /**
   * Reads the image attachments messages cite (the worker's attachment store, `$DH_HOME/attachments`). Absent:
   * this worker sends no image, and a step discards a message carrying one (unusable-messages.ts).
   */
  readonly readAttachment?: ReadAttachment;
  /** Read from the environment by the worker; never logged, never in a payload. */
  readonly apiKey: string;
  /**
   * The profile's window for the configured model is only the generic fallback (nothing configured, the
   * endpoint reported none): a header keeps the window the session already records for the same model.
   */
  readonly contextWindowAssumed?: boolean;
  /**
   * The output limit a header records when its composed config sets none, from the window of the model it
   * names (a generic endpoint without DH_MAX_TOKENS): so a model a plugin switches to gets its own limit.
   */
  readonly defaultMaxTokens?: (contextWindow: number) => number;
  /** Composes the header for a step. Within an instance the prefix must stay the recorded one. */
  composeHeader(context: HeaderContext): Promise<RequestHeader>;
  /** Sees the claimed batch before a step: enter (possibly edited; the edit is logged) or reject. */
  preStep?(batch: readonly ClaimedMessage[], context: StepContext): Promise<PreStepDecision>;
  readonly tools: ReadonlyMap<string, ToolDefinition>;
  /**
   * The agents this worker serves (src/agents): a new session's log records the one it runs, and `toolsOf` gives
   * each session its agent's tools. Absent (a runtime built from one plugin list): logs name no agent.
   */
  readonly agents?: AgentDirectory;
  /** The tools of the session whose log this is (its agent's); absent: `tools`. */
  toolsOf?(events: readonly SessionEvent[]): ReadonlyMap<string, ToolDefinition>;
  /**
   * The tool policy (policy file, remembered rules, evaluator plugins): its verdict on each call is logged
   * and comes before `toolBefore`. Absent: only `toolBefore` decides, and no verdicts are logged.
   */
  readonly policy?: PolicyEngine;
  /** The approval gate before each tool call; absent = allow everything. */
  toolBefore?(call: ToolCallView, context: StepContext): Promise<ToolGate>;
  /** Outbound observers: see the frozen request before the gate and may hand on another (which the gate refuses). */
  onRequest?(request: BuiltRequest, context: StepContext): BuiltRequest;
  /** Read-only stream observers; must not throw. */
  onStreamDelta?(delta: ModelDelta, context: StepContext): void;
  /** Read-only observers of each provider call after it returned or failed; must not throw. */
  onModelCall?(report: ModelCallReport, context: StepContext): void;
  /** Read-only observers of running tool calls' progress (throttled, never logged); must not throw. */
  onToolProgress?(report: ToolProgressReport, context: StepContext): void;
  /** Read-only observers of a step waiting for the fleet limiter (never logged); must not throw. */
  onLimiterWait?(report: LimiterWaitReport, context: StepContext): void;
  /** The fleet's shared limiter for this worker's provider account; absent: no quota configured. */
  readonly limiter?: FleetLimiter;
  /** The tenant this worker's sessions belong to (its quota applies with the account's). */
  readonly tenant?: string;
  /** Model prices: each answer's cost is logged with the price it was computed at. */
  readonly pricing?: PricingTable;
  /** The judges of `dh eval` runs this worker serves (plugins' `judge` hooks); the built-in structural one always runs first. */
  readonly judges?: readonly EvalJudge[];
  /** What one session may spend in USD; a call whose worst case would pass it is not sent. */
  readonly sessionCostCapUsd?: number;
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
