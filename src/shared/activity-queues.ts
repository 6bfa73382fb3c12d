// The session activities as one interface, and which of them each task queue serves: the workflow's
// proxies are typed by these sets, and each worker registers its queue's set (create-session-worker.ts).
import type {
  AppendOutcome,
  CloseStepInput,
  CloseTurnInput,
  CloseTurnOutcome,
  CompactInput,
  CompactOutcome,
  AppendInboxInput,
  ConfigureSessionInput,
  ConfigureSessionOutcome,
  ModelStepInput,
  ModelStepOutcome,
  OpenSessionInput,
  OpenSessionOutcome,
  ToolStepInput,
  ToolStepOutcome,
} from './activity-contracts.js';

/** Every session activity by its registered name (names and inputs never change: docs/versioning.md). */
export interface SessionActivities {
  readonly openSession: (input: OpenSessionInput) => Promise<OpenSessionOutcome>;
  readonly appendInbox: (input: AppendInboxInput) => Promise<AppendOutcome>;
  readonly modelStep: (input: ModelStepInput) => Promise<ModelStepOutcome>;
  readonly toolStep: (input: ToolStepInput) => Promise<ToolStepOutcome>;
  readonly closeStep: (input: CloseStepInput) => Promise<AppendOutcome>;
  readonly compact: (input: CompactInput) => Promise<CompactOutcome>;
  readonly closeTurn: (input: CloseTurnInput) => Promise<CloseTurnOutcome>;
  readonly configureSession: (input: ConfigureSessionInput) => Promise<ConfigureSessionOutcome>;
}

/** Log appends and repairs on the session's own queue. */
export type SessionQueueActivities = Pick<
  SessionActivities,
  'openSession' | 'closeTurn' | 'closeStep' | 'appendInbox' | 'configureSession'
>;

/** Run as local activities by the worker that runs the workflow task, i.e. the session-queue worker. */
export type LocalSessionActivities = Pick<SessionQueueActivities, 'openSession' | 'closeTurn'>;

/** Provider calls on the model queue (its workers cap their concurrency per provider key). */
export type ModelQueueActivities = Pick<SessionActivities, 'modelStep' | 'compact'>;

/** Tool runs on the queue of the host that holds the session's workspace. */
export type HostQueueActivities = Pick<SessionActivities, 'toolStep'>;

/**
 * What the session-queue worker registers: its own set, plus two that reach that queue from older runs.
 * - `toolStep`: a run that never learnt its host queue (a session opened before host queues, e5ec23b, whose
 *   carry has none) schedules tool steps without a task queue, i.e. on the workflow's own queue, today.
 * - `modelStep`: code before e5ec23b scheduled it there (the committed fixtures show it); one such attempt
 *   still pending when a worker is replaced must find a worker that runs it.
 */
export type SessionQueueRegistrations = SessionQueueActivities & Pick<SessionActivities, 'toolStep' | 'modelStep'>;
