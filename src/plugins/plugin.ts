// The plugin contract. Everything model-visible comes from a plugin (system prompt, opening context,
// tools, call configuration, notices); plugins run on the activity side and reach the workflow only
// through logged events, so adding one never breaks replay.
import type { BuiltRequest, CallConfig, Message } from '../core/index.js';
import type { ModelDelta } from '../providers/call-model.js';
import type { JudgeInput, JudgeVerdict } from '../eval/eval-judge.js';
import type {
  ClaimedMessage,
  LimiterWaitReport,
  ModelCallReport,
  PolicyEvaluation,
  PolicyQuestion,
  PreStepDecision,
  StepContext,
  ToolCallView,
  ToolDefinition,
  ToolGate,
  ToolProgressReport,
} from './contracts.js';

export interface SessionPrefix {
  /** Appended to the system prompt (plugins' parts are joined by a blank line, in plugin order). */
  readonly system?: string;
  /** Opening messages placed before the history. */
  readonly messages?: readonly Message[];
}

/** A message a plugin wants the model to see at the next step; logged as injected context. */
export interface Notice {
  readonly content: string;
}

/**
 * A plugin: a name and any of the hooks below. Hooks must be deterministic functions of their inputs
 * where they shape a request (prefix, request, tools), because the log records what they produced.
 */
export interface Plugin {
  readonly name: string;
  /** Composed once per loop instance (first step of a start, resume or fork), then frozen in the header. */
  sessionPrefix?(context: StepContext): SessionPrefix | Promise<SessionPrefix>;
  /** Sees the claimed batch before a step: enter (optionally edited) or reject. `undefined` = no opinion. */
  preStep?(
    batch: readonly ClaimedMessage[],
    context: StepContext,
  ): PreStepDecision | undefined | Promise<PreStepDecision | undefined>;
  /** A waterfall over the call configuration; a change is logged as a `request/header` change. */
  request?(config: Readonly<CallConfig>, context: StepContext): CallConfig | Promise<CallConfig>;
  /** Tools this plugin provides (registration order is the order the model sees). */
  tools?(): readonly ToolDefinition[];
  /** The approval gate before a tool call runs. `undefined` = no opinion (allowed unless another plugin objects). */
  toolBefore?(call: ToolCallView, context: StepContext): ToolGate | undefined | Promise<ToolGate | undefined>;
  /**
   * A tool-policy evaluator: asked about each call the policy file's rules would ask about (never about one
   * they allow or deny). Errors and doubt escalate to ask; `undefined` is no opinion (the next evaluator, or
   * the rules' ask, stands). Runs only on workers with a policy file.
   */
  policy?(
    call: ToolCallView,
    question: PolicyQuestion,
  ): PolicyEvaluation | undefined | Promise<PolicyEvaluation | undefined>;
  /** Recorded in the verdicts this plugin's `policy` hook decides; bump it when its judgement changes. */
  readonly policyVersion?: string;
  /**
   * Sees the frozen request right before the gate. Returning a request hands that one on instead —
   * the gate then refuses anything the log does not explain. Mutating the given one throws.
   */
  onRequest?(request: BuiltRequest, context: StepContext): BuiltRequest | void;
  /** Read-only view of streamed deltas; a throw is contained and logged. */
  onStreamDelta?(delta: Readonly<ModelDelta>, context: StepContext): void;
  /** Read-only report of each provider call (latency, outcome, error code, usage); a throw is contained and logged. */
  onModelCall?(report: Readonly<ModelCallReport>, context: StepContext): void;
  /** Read-only, throttled progress of a running tool call (never logged); a throw is contained and logged. */
  onToolProgress?(report: Readonly<ToolProgressReport>, context: StepContext): void;
  /** Read-only report of a model step waiting for the fleet's rate limiter (about once a second); a throw is contained. */
  onLimiterWait?(report: Readonly<LimiterWaitReport>, context: StepContext): void;
  /** After a step's tool results: notices the model should see at the next step. */
  afterTools?(context: StepContext): readonly Notice[] | Promise<readonly Notice[]>;
  /**
   * A judge of `dh eval`: scores a candidate answer against the recorded one (0..1) with a reason. Runs on the
   * worker that sends the candidate; a throw, a timeout or an invalid verdict is recorded as the judge's error.
   */
  judge?(input: JudgeInput): JudgeVerdict | Promise<JudgeVerdict>;
}
