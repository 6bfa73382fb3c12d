// The web console's HTTP API contract: the JSON each route answers and accepts, and the events its SSE
// streams carry. The server (src/console/) and the browser app (console-ui/) both type against this file;
// the OpenAPI document describes the same shapes. Types only, plus the route paths: the browser app bundles
// this file, so the zod schemas that check these shapes on the server live in console-responses.ts.
import type { MessageOrigin, SessionEvent, StepCost, Usage, UserContent } from '../core/index.js';
import type { SessionStateView } from '../shared/session-messages.js';
import type { EvalReport } from '../eval/eval-report.js';
import type { EvalProgress } from '../shared/eval-contracts.js';
import type { ListedAgent } from '../agents/agent-catalog.js';

/** Every route, relative to the server's origin. `:id` is a session id; `:turn`/`:step` are numbers. */
export const CONSOLE_ROUTES = {
  openapi: '/api/openapi.json',
  sessions: '/api/sessions',
  session: '/api/sessions/:id',
  events: '/api/sessions/:id/events',
  timeline: '/api/sessions/:id/timeline',
  request: '/api/sessions/:id/steps/:turn/:step/request',
  live: '/api/sessions/:id/live',
  messages: '/api/sessions/:id/messages',
  interrupt: '/api/sessions/:id/interrupt',
  approvals: '/api/sessions/:id/approvals',
  approve: '/api/sessions/:id/approvals/:callId',
  compact: '/api/sessions/:id/compact',
  fork: '/api/sessions/:id/fork',
  evalRun: '/api/evals/:runId',
  agents: '/api/agents',
} as const;

/** An error, as every route answers one: a stable code and a message that says what is wrong. */
export interface ApiError {
  readonly error: { readonly code: string; readonly message: string };
}

/**
 * GET /api/sessions[?status=running|idle|closed|…][&q=text][&since=T][&until=T][&limit=N][&pageToken=P] —
 * newest first, parents with their children. `since`/`until` (ISO 8601 or epoch ms) bound when a session
 * started; `q` keeps sessions whose id or whose user/assistant messages contain it (case-insensitive).
 * Paged: a page has at most `limit` sessions and names the next page's token, or null on the last page.
 */
export interface SessionListItem {
  readonly sessionId: string;
  /** From Temporal when reachable (`running`, `idle`, `closed`, …), else `unknown`; `completed` etc. for ended runs. */
  readonly status: string;
  readonly turns: number;
  /** Tokens of the session's own model steps plus what its subagents spent. */
  readonly tokens: number;
  /** cacheRead / (cacheRead + inputUncached) of its own steps; null before any input was reported. */
  readonly cacheReadShare: number | null;
  /** Epoch ms of the last event in its log. */
  readonly lastActivity: number | null;
  /** Set for a subagent: the session that delegated to it. */
  readonly parentSessionId: string | null;
  readonly depth: number;
}
export interface SessionList {
  readonly sessions: readonly SessionListItem[];
  /** Pass as `pageToken` for the next page; null: this is the last page. */
  readonly nextPageToken: string | null;
  /**
   * Where the page came from: Temporal visibility (its list query pages by status and start time, so a fleet
   * of any size pages in constant work), or the store's own index when Temporal does not answer.
   */
  readonly source: 'visibility' | 'store';
}

/**
 * GET /api/agents[?taskQueue=q] — the agents live workers serve (the agent catalog in the store): one entry per
 * task queue, name and version (a rolling deploy shows both versions), by queue and name, newest version first.
 * A worker's entries leave the list when it closes, or `ttlMs` after it last refreshed them (killed).
 */
export type AgentListItem = ListedAgent;
export interface AgentList {
  readonly agents: readonly AgentListItem[];
  readonly ttlMs: number;
}

/** GET /api/sessions/:id — what the log adds up to, and the workflow's state when Temporal answers. */
export interface SessionDetail {
  readonly sessionId: string;
  readonly state: SessionStateView | null;
  /** Why `state` is null (no workflow, Temporal unreachable), when it is. */
  readonly stateUnavailable: string | null;
  readonly head: number;
  readonly turns: number;
  readonly usage: Usage;
  readonly cacheReadShare: number | null;
  readonly parentSessionId: string | null;
  readonly children: readonly { readonly callId: string; readonly sessionId: string; readonly ended: string }[];
  /** Messages logged and not yet claimed by a step, in arrival order (the queues, as the log has them). */
  readonly queued: readonly QueuedMessage[];
  /** The running workflow's task queue and how many workers poll it (null: no running workflow, or no answer). */
  readonly worker: { readonly taskQueue: string; readonly pollers: number } | null;
  /** Set when no worker polls that queue: nothing the session was sent can run until one does. */
  readonly workerWarning: ApiWarning | null;
  /** The tool call waiting for a decision now (from `state`; null when none waits or `state` is null). */
  readonly pendingApproval: PendingApproval | null;
}

/**
 * A tool call waiting for the `approve` update: `POST /api/sessions/:id/approvals/:callId` decides it, by its
 * `callId` or its `shortId` (both name it while it waits).
 */
export interface PendingApproval {
  readonly callId: string;
  /** Five hex digits of the call id's digest: what `dh approve` and the page's buttons use. */
  readonly shortId: string;
  /** The tool it calls. */
  readonly tool: string;
  /** Why the policy asks. */
  readonly reason: string;
  /** The call's arguments as the model wrote them, at most 500 characters (null when the log lacks the call). */
  readonly argumentsPreview: string | null;
  /** Where the call is: its step, and the seq of its `approval/request` (null when not logged yet). */
  readonly turn: number;
  readonly step: number;
  readonly requestSeq: number | null;
}

/** GET /api/sessions/:id/approvals — the call waiting for a decision, from the workflow's `state` now. */
export interface PendingApprovals {
  readonly sessionId: string;
  /** The waiting call; null when none waits (only one waits at a time). */
  readonly pending: PendingApproval | null;
}

/** A message waiting in a queue: where, from whom, and the start of what it says. */
export interface QueuedMessage {
  readonly messageId: string;
  readonly target: 'next-turn' | 'next-step';
  readonly origin: MessageOrigin;
  readonly source: string | null;
  /** Moved to the next turn by an interrupt. */
  readonly downgraded: boolean;
  readonly seq: number;
  /** Its text, at most 200 characters (images as `[image]`). */
  readonly preview: string;
}

/** Something the caller should know that did not stop the request (code NO_WORKER_POLLING). */
export interface ApiWarning {
  readonly code: string;
  readonly message: string;
}

/** GET /api/sessions/:id/events?from=SEQ — the log's events from `from` (default 0), as stored. */
export interface SessionEvents {
  readonly events: readonly SessionEvent[];
  readonly head: number;
}

/**
 * How a step stands, from its log alone: `running` until its `step/end`; then `completed` (its answer was
 * logged whole), `interrupted` (an interrupt cut its answer, or its turn was aborted before one), or `failed`
 * (its `step/end` carries an error).
 */
export type StepState = 'running' | 'completed' | 'interrupted' | 'failed';

/**
 * One stretch of a step's time, in ms from its `step/start`: `wait` (deriving and checking the request,
 * the rate limiter, until `request/sent`), `model` (until the answer was logged), `approval` (a call
 * waiting for a decision), `tool` (one call, from `tool/start` to its result). `endMs` is null while it lasts.
 */
export interface StepPhase {
  readonly kind: 'wait' | 'model' | 'approval' | 'tool';
  /** `request`, the model id, or the tool call's name and id. */
  readonly label: string;
  readonly startMs: number;
  readonly endMs: number | null;
}

/** One model step in the timeline. */
export interface TimelineStep {
  readonly turn: number;
  readonly step: number;
  readonly state: StepState;
  /** Why it failed or was interrupted, when the log says. */
  readonly error: { readonly code: string; readonly message: string } | null;
  /** The model its request header named. */
  readonly model: string | null;
  /** Epoch ms of its `step/start` and `step/end` (null while it runs). */
  readonly startedAt: number;
  readonly endedAt: number | null;
  /** Its cost by the worker's pricing table, as logged with the answer (null: no price or no usage). */
  readonly cost: StepCost | null;
  readonly phases: readonly StepPhase[];
  /** The seq range of the step's events (`step/start` .. `step/end`, or the head while it runs). */
  readonly fromSeq: number;
  readonly toSeq: number;
  /** The digest `request/sent` recorded; null while the request is not sent yet. */
  readonly requestDigest: string | null;
  readonly usage: Usage | null;
  /** Epoch ms from `step/start` to the answer; null while it runs. */
  readonly latencyMs: number | null;
  readonly finishReason: string | null;
  /** Tool calls of its answer with how each ended (`ok`, `error`, …; null while running). */
  readonly toolCalls: readonly { readonly callId: string; readonly name: string; readonly status: string | null }[];
  /** This step's request header differs from the one before it (a header change). */
  readonly headerChanged: boolean;
}
export interface TimelineTurn {
  readonly turn: number;
  /** How it ended, or null while open. */
  readonly ended: string | null;
  readonly steps: readonly TimelineStep[];
}
/** What the steps of one model cost, summed over the session. */
export interface ModelCost {
  readonly model: string;
  readonly steps: number;
  readonly usage: Usage;
  /** Summed over the steps that were priced; null when none was. */
  readonly usd: number | null;
  /** Steps with usage but no logged cost (the worker had no price for the model). */
  readonly unpricedSteps: number;
  /** cacheRead / (cacheRead + inputUncached); null before any input was reported. */
  readonly cacheReadShare: number | null;
}

/** GET /api/sessions/:id/timeline — turns → steps (the events between them come from the events route). */
export interface Timeline {
  readonly sessionId: string;
  readonly turns: readonly TimelineTurn[];
  readonly head: number;
  /** Per model, in order of first use. */
  readonly costByModel: readonly ModelCost[];
}

/**
 * How a step's request relates to the previous step's (what a provider's prefix cache sees). Message
 * counts and indexes are over the request's conversation messages, after the system prompt (which is
 * part of the header: a change to it shows as `headerChanged`).
 */
export interface RequestDiff {
  /** The step compared against; null for the session's first request. */
  readonly previous: { readonly turn: number; readonly step: number } | null;
  /** Messages the two requests share from the start. */
  readonly commonPrefix: number;
  /** Messages of this request after the common prefix (what was appended, or what replaced the rest). */
  readonly appended: number;
  /** The index of the first message that differs when the prefix broke, else null. */
  readonly prefixBrokeAt: number | null;
  /** Why it broke, in words (a header change, a compaction, a surface replace, …), when it did. */
  readonly reason: string | null;
  /** Whether tools, system prompt or the call config differ from the previous request. */
  readonly headerChanged: boolean;
}

/** GET /api/sessions/:id/steps/:turn/:step/request — what the model saw, re-derived from the log now. */
export interface StepRequest {
  readonly turn: number;
  readonly step: number;
  /** The wire body as the provider received it (parsed JSON). */
  readonly body: unknown;
  /** sha256 of the re-derived wire body. */
  readonly digest: string;
  /** The digest `request/sent` recorded. */
  readonly recordedDigest: string;
  /** The two agree: the log explains exactly what was sent. */
  readonly verified: boolean;
  readonly diff: RequestDiff;
}

/** POST /api/sessions/:id/messages — `content` as the signals take it: text, or content parts. */
export interface MessageRequest {
  readonly kind: 'followup' | 'steer' | 'inject';
  readonly content: UserContent;
  readonly source?: string;
}
/** POST /api/sessions/:id/approvals/:callId — `:callId` is the waiting call's id or its short id. */
export interface ApprovalRequest {
  readonly decision: 'approve' | 'deny';
  readonly reason?: string;
  /** Also decide later calls of this session alike: every call of this tool, or calls with these arguments. */
  readonly remember?: 'tool' | 'call';
}
/** POST /api/sessions/:id/compact */
export interface CompactRequest {
  readonly prune?: boolean;
}
/** POST /api/sessions/:id/fork — the new session's log is the first `atSeq` events. */
export interface ForkRequest {
  readonly atSeq: number;
  readonly as?: string;
}
/** Answered with 201. */
export interface ForkResponse {
  readonly sessionId: string;
  /** Set when no worker polls the fork's task queue. */
  readonly warning?: ApiWarning;
}
/**
 * Every other action that succeeds answers this (202: the workflow took it; what follows shows in the log).
 * A message or interrupt sent while no worker polls the session's queue is accepted with a `warning`; an
 * approval or compaction (updates, which a worker must take) is refused with 409 NO_WORKER_POLLING instead.
 */
export interface Accepted {
  readonly accepted: true;
  readonly warning?: ApiWarning;
}

/**
 * GET /api/sessions/:id/live — server-sent events. Each SSE `event:` name is a `type` below and its
 * `data:` the JSON object. `event` and `text` come from the session follower (log + delta channel).
 */
/**
 * A message of GET /api/sessions/:id/live. Every one but `status` and `stalled` has its stream position as
 * the SSE event id (`<seq>:<delta>`); reconnecting with it as Last-Event-ID (or `?from=`) continues right
 * after it.
 */
export type LiveMessage =
  /**
   * A logged event. On an assistant message, `replaced` says the step's live text the client has (on
   * this connection or, resumed, before it) is not known to be a prefix of the content: show the content
   * instead of it. Without it, the content continues the live text.
   */
  | { readonly type: 'event'; readonly event: SessionEvent; readonly replaced?: true }
  /** Live answer text. `restart` (an attempt number): a retried attempt begins here; drop the step's text first. */
  | {
      readonly type: 'text';
      readonly turn: number;
      readonly step: number;
      readonly text: string;
      readonly restart?: number;
    }
  /** A streaming step's token counts so far, with their cost where the worker prices the model. */
  | {
      readonly type: 'usage';
      readonly turn: number;
      readonly step: number;
      readonly usage: Usage;
      readonly cost: StepCost | null;
      readonly restart?: number;
    }
  /** The store could not be read; the stream retries and carries on where it was. */
  | { readonly type: 'stalled'; readonly reason: string }
  /** The step waits for the fleet's rate limiter; `label` is the line to show ("waiting for … (3 ahead)…"). */
  | {
      readonly type: 'limiter-wait';
      readonly turn: number;
      readonly step: number;
      readonly reason: string;
      readonly ahead: number;
      readonly waitMs: number;
      readonly label: string;
    }
  | { readonly type: 'status'; readonly state: SessionStateView | null };

/**
 * GET /api/evals/:runId — a `dh eval` run: its workflow's status, its progress while it runs, and once it has
 * completed the report re-derived from the logs (both answers of every step, their diff, totals, judges).
 */
export interface EvalRunView {
  readonly runId: string;
  /** The eval workflow's status: `RUNNING`, `COMPLETED`, `FAILED`, `TERMINATED`, … */
  readonly status: string;
  readonly progress: EvalProgress | null;
  readonly report: EvalReport | null;
}
