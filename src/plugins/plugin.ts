// The plugin contract. Everything model-visible comes from a plugin (system prompt, opening context,
// tools, call configuration, notices); plugins run on the activity side and reach the workflow only
// through logged events, so adding one never breaks replay.
import type { BuiltRequest, CallConfig, Message, SessionEvent } from '../core/index.js';
import type {
  ClaimedMessage,
  ModelCallReport,
  PreStepDecision,
  ToolDefinition,
  ToolGate,
} from '../activities/session-runtime.js';
import type { ModelDelta } from '../providers/call-model.js';

export interface PluginContext {
  readonly sessionId: string;
  readonly turn: number;
  readonly step: number;
  /** The session's log so far (frozen); read-only. */
  readonly events: readonly SessionEvent[];
}

export interface SessionPrefix {
  /** Appended to the system prompt (plugins' parts are joined by a blank line, in plugin order). */
  readonly system?: string;
  /** Opening messages placed before the history. */
  readonly messages?: readonly Message[];
}

/** allow / deny (the model sees a denied result) / ask (the call pauses for the `approve` update). */
export type ToolBeforeDecision = ToolGate;

export interface ToolCallView {
  readonly callId: string;
  readonly name: string;
  /** The raw argument string the model produced. */
  readonly arguments: string;
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
  sessionPrefix?(context: PluginContext): SessionPrefix | Promise<SessionPrefix>;
  /** Sees the claimed batch before a step: enter (optionally edited) or reject. `undefined` = no opinion. */
  preStep?(
    batch: readonly ClaimedMessage[],
    context: PluginContext,
  ): PreStepDecision | undefined | Promise<PreStepDecision | undefined>;
  /** A waterfall over the call configuration; a change is logged as a `request/header` change. */
  request?(config: Readonly<CallConfig>, context: PluginContext): CallConfig | Promise<CallConfig>;
  /** Tools this plugin provides (registration order is the order the model sees). */
  tools?(): readonly ToolDefinition[];
  /** The approval gate before a tool call runs. `undefined` = no opinion (allowed unless another plugin objects). */
  toolBefore?(
    call: ToolCallView,
    context: PluginContext,
  ): ToolBeforeDecision | undefined | Promise<ToolBeforeDecision | undefined>;
  /**
   * Sees the frozen request right before the gate. Returning a request hands that one on instead —
   * the gate then refuses anything the log does not explain. Mutating the given one throws.
   */
  onRequest?(request: BuiltRequest, context: PluginContext): BuiltRequest | void;
  /** Read-only view of streamed deltas; a throw is contained and logged. */
  onStreamDelta?(delta: Readonly<ModelDelta>, context: PluginContext): void;
  /** Read-only report of each provider call (latency, outcome, error code, usage); a throw is contained and logged. */
  onModelCall?(report: Readonly<ModelCallReport>, context: PluginContext): void;
  /** After a step's tool results: notices the model should see at the next step. */
  afterTools?(context: PluginContext): readonly Notice[] | Promise<readonly Notice[]>;
}
