// A typed client for other Node services: open a session (start or attach), send followup / steer /
// inject / interrupt / close, send with acknowledgement, read state, and wait for a turn's end. Retries when
// Temporal says resource-exhausted; a send to a closed session is a clear error.
import type { Client } from '@temporalio/client';
import {
  isGrpcServiceError,
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  type WorkflowHandle,
} from '@temporalio/client';
import { DhError, ErrorCode, sessionIdProblem, type AgentOverrides, type UserContent } from '../core/index.js';
import {
  approveUpdate,
  closeSignal,
  compactUpdate,
  followupSignal,
  injectSignal,
  interruptSignal,
  messageStatusQuery,
  sendUpdate,
  configureUpdate,
  type ConfigureResult,
  sessionWorkflowId,
  stateQuery,
  steerSignal,
  type ApprovePayload,
  type CompactPayload,
  type MessageStatusView,
  type SendReceipt,
  type SendUpdatePayload,
  type SessionStateView,
} from '../shared/session-messages.js';
import type { SessionLimits, SessionWorkflow, SessionWorkflowInput } from '../shared/session-workflow-input.js';
import { sessionWorkerPresence, type WorkerPresence } from './worker-presence.js';
import { openOptions, type OpenOptions, type StartOptions } from './open-options.js';
import { unwrapUpdateRefusal } from './update-refusal.js';
import type { StreamFrame } from '../streaming/session-follower.js';
import { watchFrames, type LiveSource, type WatchOptions } from './watch-frames.js';
import {
  waitForMessageTurnEnd,
  waitForTurnEnd,
  type SentReceipt,
  type TurnEnd,
  TurnWaitErrorCode,
  type TurnWaitPort,
  type WaitForTurnOptions,
} from './wait-for-turn.js';

/** gRPC status codes (fixed by the gRPC spec). */
const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_RESOURCE_EXHAUSTED = 8;

export const SessionClientErrorCode = {
  Closed: 'SESSION_CLOSED',
  NotFound: 'SESSION_NOT_FOUND',
  Timeout: 'CLIENT_TIMEOUT',
} as const;

export interface SessionClientOptions {
  readonly taskQueue: string;
  /** Deadline of one call, in milliseconds (default 30 s). */
  readonly timeoutMs?: number;
  /** Attempts when the server answers RESOURCE_EXHAUSTED (default 8, with backoff from 100 ms). */
  readonly maxAttempts?: number;
}

export interface MessageOptions {
  readonly messageId?: string;
  readonly source?: string;
  /** Start the session when it does not exist yet (signal-with-start / update-with-start). */
  readonly start?: boolean;
  /** With `start`: the agent a new session runs (default: the workers' default agent). */
  readonly agent?: string;
  /** With `start`: a new session's overrides of its agent. */
  readonly overrides?: AgentOverrides;
  readonly limits?: Partial<SessionLimits>;
}

type SessionHandle = WorkflowHandle<SessionWorkflow>;

export class SessionClient {
  constructor(
    readonly client: Client,
    readonly options: SessionClientOptions,
  ) {}

  handle(sessionId: string): SessionHandle {
    return this.client.workflow.getHandle<SessionWorkflow>(sessionWorkflowId(sessionId));
  }

  /**
   * Starts the session's workflow, or attaches to the running one. `options` names the agent a new session runs
   * (and its overrides, its limits); a bare limits object, the older form, is still taken.
   */
  async open(sessionId: string, options?: OpenOptions | Partial<SessionLimits>): Promise<SessionHandle> {
    const start = openOptions(options);
    return this.#call(sessionId, () =>
      this.client.workflow.start<SessionWorkflow>('agentSession', {
        workflowId: sessionWorkflowId(sessionId),
        taskQueue: this.options.taskQueue,
        args: [this.#input(sessionId, start)],
        workflowIdConflictPolicy: 'USE_EXISTING',
      }),
    );
  }

  followup(sessionId: string, content: UserContent, options: MessageOptions = {}): Promise<void> {
    return this.#signal(sessionId, 'followup', content, options);
  }

  steer(sessionId: string, content: UserContent, options: MessageOptions = {}): Promise<void> {
    return this.#signal(sessionId, 'steer', content, options);
  }

  inject(sessionId: string, content: UserContent, options: MessageOptions = {}): Promise<void> {
    return this.#signal(sessionId, 'inject', content, options);
  }

  /**
   * Sends and waits for the workflow's acknowledgement (`{messageId, position}`); it does not wait for a turn.
   * The receipt's `turnEnded()` does: see `turnEnded`.
   */
  async send(
    sessionId: string,
    payload: SendUpdatePayload,
    options: Pick<MessageOptions, 'start' | 'agent' | 'overrides' | 'limits'> = {},
  ): Promise<SentReceipt> {
    const receipt = await this.#send(sessionId, payload, options);
    const turnEnded = (waitOptions?: WaitForTurnOptions) => this.turnEnded(sessionId, receipt, waitOptions);
    return Object.defineProperty({ ...receipt }, 'turnEnded', { value: turnEnded, enumerable: false }) as SentReceipt;
  }

  /**
   * Resolves with how turn `turn` ended (`{turn, reason, errorCode}`, as the workflow's `lastTurnEnd` reports it)
   * once the session's workflow says it ended; at once for a turn that ended already. Temporal only, no store:
   * it polls the `state` query of the session's current run with backoff (a continue-as-new is followed), so it
   * needs a worker like every query — while none polls (a worker restart), it keeps waiting and retrying, and
   * fails only at `timeoutMs` (CLIENT_TIMEOUT, naming the session and turn) or `signal`. `reason` is null when the
   * turn is known to have ended but the workflow no longer remembers how (older than its latest 16 turn ends).
   * SESSION_CLOSED when the session's workflow closed before turn `turn` (it will never run there);
   * SESSION_NOT_FOUND when it has no workflow.
   */
  waitForTurn(sessionId: string, turn: number, options: WaitForTurnOptions = {}): Promise<TurnEnd> {
    if (!Number.isSafeInteger(turn) || turn < 1) {
      return Promise.reject(new DhError(TurnWaitErrorCode.InvalidTurn, `turn must be a positive integer, not ${turn}`));
    }
    return this.#wait(sessionId, options, (port, deadline) =>
      waitForTurnEnd(port, sessionId, turn, { ...options, deadline }),
    );
  }

  /**
   * Resolves with the end of the turn a message lands in (give its `send` receipt, or the `messageId` a
   * followup / steer / inject was sent with): first it waits until the workflow says which turn took the message
   * (`messageStatus`'s `turn`: a step of that turn logged it), then as `waitForTurn`. A followup sent while a turn
   * runs lands in a later turn; a steer in the running turn's next step (or, after its last step, in the turn it
   * wakes). Errors: MESSAGE_REFUSED (the workflow refused it), MESSAGE_DISCARDED (still queued at close),
   * MESSAGE_TURN_UNKNOWN (an id the workflow does not know, or whose turn it no longer remembers: it keeps the
   * latest 64), SESSION_CLOSED, CLIENT_TIMEOUT (one `timeoutMs` for both waits).
   */
  turnEnded(sessionId: string, message: SendReceipt | string, options: WaitForTurnOptions = {}): Promise<TurnEnd> {
    const messageId = typeof message === 'string' ? message : message.messageId;
    return this.#wait(sessionId, options, (port, deadline) =>
      waitForMessageTurnEnd(port, sessionId, messageId, { ...options, deadline }),
    );
  }

  async #wait(
    sessionId: string,
    options: WaitForTurnOptions,
    wait: (port: TurnWaitPort, deadline: number) => Promise<TurnEnd>,
  ): Promise<TurnEnd> {
    const problem = sessionIdProblem(sessionId);
    if (problem !== null) {
      throw new DhError(ErrorCode.InvalidSessionId, `invalid session id "${sessionId}": ${problem}`, { sessionId });
    }
    const deadline = options.timeoutMs !== undefined ? Date.now() + options.timeoutMs : Number.POSITIVE_INFINITY;
    return wait(this.#turnWaitPort(sessionId, deadline, options.signal), deadline);
  }

  /** Temporal as a wait polls it: each call within the wait's deadline (and the client's per-call one). */
  #turnWaitPort(sessionId: string, deadline: number, signal: AbortSignal | undefined): TurnWaitPort {
    const workflowId = sessionWorkflowId(sessionId);
    const run = <T>(fn: () => Promise<T>): Promise<T> => {
      const callDeadline = Math.min(deadline, Date.now() + (this.options.timeoutMs ?? 30_000));
      const call = () => this.client.withDeadline(callDeadline, fn);
      return signal ? this.client.withAbortSignal(signal, call) : call();
    };
    const ofRun = (runId: string) => this.client.workflow.getHandle<SessionWorkflow>(workflowId, runId);
    return {
      describe: async () => {
        try {
          const description = await run(() => this.handle(sessionId).describe());
          const status = description.status.name;
          return {
            runId: description.runId,
            closed: status !== 'RUNNING' && status !== 'CONTINUED_AS_NEW',
            completed: status === 'COMPLETED',
          };
        } catch (error) {
          if (error instanceof WorkflowNotFoundError) throw translate(sessionId, error);
          throw error;
        }
      },
      state: (runId) => run(() => ofRun(runId).query(stateQuery)),
      messageStatus: (runId, messageId) => run(() => ofRun(runId).query(messageStatusQuery, messageId)),
      lastTurn: async (runId) => (await run(() => ofRun(runId).result())).turns,
    };
  }

  async #send(
    sessionId: string,
    payload: SendUpdatePayload,
    options: Pick<MessageOptions, 'start' | 'agent' | 'overrides' | 'limits'>,
  ): Promise<SendReceipt> {
    if (!options.start)
      return this.#call(sessionId, () => this.handle(sessionId).executeUpdate(sendUpdate, { args: [payload] }));
    return this.#call(sessionId, () =>
      this.client.workflow.executeUpdateWithStart(sendUpdate, {
        args: [payload],
        startWorkflowOperation: new WithStartWorkflowOperation<SessionWorkflow>('agentSession', {
          workflowId: sessionWorkflowId(sessionId),
          taskQueue: this.options.taskQueue,
          args: [this.#input(sessionId, options)],
          workflowIdConflictPolicy: 'USE_EXISTING',
        }),
      }),
    );
  }

  /**
   * Sets the session's overrides of its agent, as a whole (`{}` clears them): instructions (`system`, or
   * `systemAppend`), `model`, `temperature`, `maxTokens`, a subset of its `tools`. The worker checks them — a
   * model its endpoint does not serve, or a tool the agent lacks, is refused (INVALID_OVERRIDES, naming what
   * there is) — and logs them with `source`; they apply from the session's next step, never during one.
   */
  configure(
    sessionId: string,
    overrides: AgentOverrides,
    options: { readonly source?: string } = {},
  ): Promise<ConfigureResult> {
    return unwrapUpdateRefusal(sessionId, () =>
      this.#call(sessionId, () =>
        this.handle(sessionId).executeUpdate(configureUpdate, {
          args: [{ overrides, ...(options.source !== undefined ? { source: options.source } : {}) }],
        }),
      ),
    );
  }

  interrupt(sessionId: string, reason?: string): Promise<void> {
    return this.#call(sessionId, () =>
      this.handle(sessionId).signal(interruptSignal, reason !== undefined ? { reason } : undefined),
    );
  }

  /** The current turn finishes, then the workflow completes. */
  close(sessionId: string, reason?: string): Promise<void> {
    return this.#call(sessionId, () =>
      this.handle(sessionId).signal(closeSignal, reason !== undefined ? { reason } : undefined),
    );
  }

  state(sessionId: string): Promise<SessionStateView> {
    return this.#call(sessionId, () => this.handle(sessionId).query(stateQuery));
  }

  /**
   * What the workflow knows of a message now (accepted not yet logged, queued, claimed by the running step,
   * handled — its fate is then in the log —, refused with why, or unknown). Needs a worker, like every query.
   */
  messageStatus(sessionId: string, messageId: string): Promise<MessageStatusView> {
    return this.#call(sessionId, () => this.handle(sessionId).query(messageStatusQuery, messageId));
  }

  /** Decides a tool call waiting for approval; resolves with the decision the workflow recorded. */
  approve(sessionId: string, payload: ApprovePayload): Promise<{ callId: string; decision: 'approve' | 'deny' }> {
    return this.#call(sessionId, () => this.handle(sessionId).executeUpdate(approveUpdate, { args: [payload] }));
  }

  /** Asks for a compaction at the next boundary (`prune`: trim old tool results instead of summarizing). */
  compact(sessionId: string, payload: CompactPayload = {}): Promise<{ accepted: true }> {
    return this.#call(sessionId, () => this.handle(sessionId).executeUpdate(compactUpdate, { args: [payload] }));
  }

  /**
   * The session's live stream: logged events and the output of the step streaming now, each frame with its
   * stream position. Give `from` a frame's position to continue right after it (in another process, after a
   * crash): no frame lost, none twice. `source` is the store and delta channel the workers write
   * (openSessionStore, openDeltaChannel from the full package). Ends at `signal`, or once the session has
   * closed and its last events are delivered.
   */
  watch(
    sessionId: string,
    source: LiveSource,
    options: WatchOptions = {},
  ): AsyncGenerator<StreamFrame, void, undefined> {
    return watchFrames(source, sessionId, () => this.#closed(sessionId), options);
  }

  /** True once the session's workflow is closed (a continued-as-new run is the same open session). */
  async #closed(sessionId: string): Promise<boolean | null> {
    try {
      const status = (await this.handle(sessionId).describe()).status.name;
      return status !== 'RUNNING' && status !== 'CONTINUED_AS_NEW';
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return null;
      return null;
    }
  }

  /**
   * Whether a worker polls the task queue the session's workflow runs on: updates, queries and turns all
   * wait for one. Null when the session has no running workflow or Temporal does not answer.
   */
  workerPresence(sessionId: string): Promise<WorkerPresence | null> {
    return sessionWorkerPresence(this.client, sessionId);
  }

  async #signal(
    sessionId: string,
    kind: 'followup' | 'steer' | 'inject',
    content: UserContent,
    options: MessageOptions,
  ): Promise<void> {
    const signal = kind === 'followup' ? followupSignal : kind === 'steer' ? steerSignal : injectSignal;
    const payload = {
      content,
      ...(options.messageId !== undefined ? { messageId: options.messageId } : {}),
      ...(options.source !== undefined ? { source: options.source } : {}),
    };
    if (!options.start) {
      await this.#call(sessionId, () => this.handle(sessionId).signal(signal, payload));
      return;
    }
    await this.#call(sessionId, () =>
      this.client.workflow.signalWithStart<SessionWorkflow, [unknown]>('agentSession', {
        workflowId: sessionWorkflowId(sessionId),
        taskQueue: this.options.taskQueue,
        args: [this.#input(sessionId, options)],
        signal,
        signalArgs: [payload],
      }),
    );
  }

  #input(sessionId: string, start: StartOptions): SessionWorkflowInput {
    return {
      sessionId,
      ...(start.agent !== undefined ? { agent: start.agent } : {}),
      ...(start.overrides !== undefined ? { overrides: start.overrides } : {}),
      ...(start.limits ? { limits: start.limits } : {}),
    };
  }

  /** One call with a deadline, retried with backoff while the server is resource-exhausted. */
  async #call<T>(sessionId: string, run: () => Promise<T>): Promise<T> {
    // The one session-id rule, before anything reaches Temporal: no door opens a session no other door can name.
    const problem = sessionIdProblem(sessionId);
    if (problem !== null) {
      throw new DhError(ErrorCode.InvalidSessionId, `invalid session id "${sessionId}": ${problem}`, { sessionId });
    }
    const attempts = this.options.maxAttempts ?? 8;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.client.withDeadline(Date.now() + (this.options.timeoutMs ?? 30_000), run);
      } catch (error) {
        if (isGrpcServiceError(error) && (error.code as number) === GRPC_RESOURCE_EXHAUSTED && attempt < attempts) {
          await new Promise((r) => setTimeout(r, Math.min(5_000, 100 * 2 ** (attempt - 1))));
          continue;
        }
        throw translate(sessionId, error);
      }
    }
  }
}

function translate(sessionId: string, error: unknown): unknown {
  if (error instanceof WorkflowNotFoundError) {
    const closed = /completed|closed/i.test(error.message);
    return new DhError(
      closed ? SessionClientErrorCode.Closed : SessionClientErrorCode.NotFound,
      closed
        ? `session "${sessionId}" is closed; resume it to send more`
        : `session "${sessionId}" does not exist (or is not running)`,
      { sessionId },
      { cause: error },
    );
  }
  if (isGrpcServiceError(error) && (error.code as number) === GRPC_DEADLINE_EXCEEDED) {
    return new DhError(
      SessionClientErrorCode.Timeout,
      `session "${sessionId}": the Temporal call timed out`,
      { sessionId },
      { cause: error },
    );
  }
  return error;
}
