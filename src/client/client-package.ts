// The entry of the `@durable-harness/client` package (packages/client): what a service needs to steer
// sessions, and nothing that pulls the worker's native dependencies (no stores, no streaming, no worker).
// test/client-package/ fails if its compiled files import anything outside the package's dependencies.
export {
  SessionClient,
  SessionClientErrorCode,
  type MessageOptions,
  type SessionClientOptions,
} from './session-client.js';
export type { LiveSource, WatchOptions } from './watch-frames.js';
export type { OpenOptions } from './open-options.js';
export {
  turnEndFromView,
  TurnWaitErrorCode,
  type SentReceipt,
  type TurnEnd,
  type WaitForTurnOptions,
} from './wait-for-turn.js';
export type { FollowOp, StreamFrame } from '../streaming/session-follower.js';
export {
  formatPosition,
  parsePosition,
  START_POSITION,
  StreamPositionErrorCode,
  type StreamPosition,
} from '../streaming/stream-position.js';
export { NO_WORKER_POLLING, noWorkerMessage, type WorkerPresence } from './worker-presence.js';
export {
  approveUpdate,
  ApprovePayload,
  configureUpdate,
  ConfigurePayload,
  type ConfigureResult,
  closeSignal,
  CloseSignalPayload,
  followupSignal,
  injectSignal,
  interruptSignal,
  InterruptSignalPayload,
  MAX_MESSAGE_CHARS,
  MessageSignalPayload,
  messageStatusQuery,
  SendUpdatePayload,
  sendUpdate,
  SessionId,
  sessionWorkflowId,
  stateQuery,
  steerSignal,
  type MessageStatusView,
  type SendReceipt,
  type SessionStateView,
  type SessionStatus,
  type TurnEndView,
} from '../shared/session-messages.js';
export {
  DEFAULT_LIMITS,
  type SessionLimits,
  type SessionWorkflow,
  type SessionWorkflowInput,
  type SessionWorkflowResult,
} from '../shared/session-workflow-input.js';
export {
  AgentOverrides,
  DEFAULT_AGENT_NAME,
  DhError,
  InboxTarget,
  SessionEvent,
  TurnEndReason,
  UserContent,
} from '../core/index.js';
export { applyFateEvent, messageFate, messageFates, type MessageFate } from '../core/message-fates.js';
