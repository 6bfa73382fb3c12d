// The web console's HTTP API as a Hono app: every route of CONSOLE_ROUTES over a session store, the
// delta channel and (when Temporal answers) a SessionClient, behind the console guard and the body limit,
// each answer checked against its response schema; the browser app's files for everything outside /api.
import { Hono, type Context } from 'hono';
import type { z } from 'zod';
import type { DeriveOptions } from '../audit/derive-sent-requests.js';
import type { ReadAttachment } from '../providers/wire-body.js';
import type { SessionClient } from '../client/session-client.js';
import { NO_WORKER_POLLING, noWorkerMessage } from '../client/worker-presence.js';
import { sessionOverview } from '../operations/session-overview.js';
import { forkSession } from '../operations/fork-session.js';
import { DhError, type SessionEvent } from '../core/index.js';
import { payloadProblem, type SessionStateView } from '../shared/session-messages.js';
import type { DeltaChannel } from '../streaming/delta-channel.js';
import { parsePosition, START_POSITION, StreamPositionErrorCode } from '../streaming/stream-position.js';
import type { SessionStore } from '../stores/session-store.js';
import { AGENT_CATALOG_TTL_MS, type AgentCatalog } from '../agents/agent-catalog.js';
import { ApprovalBody, CompactBody, ForkBody, InterruptBody, MessageBody } from './console-bodies.js';
import {
  CONSOLE_ROUTES,
  type Accepted,
  type ApiWarning,
  type ForkResponse,
  type PendingApprovals,
  type SessionDetail,
  type SessionEvents,
} from './console-api.js';
import { consoleBodyLimit } from './console-body-limit.js';
import { apiError, ConsoleErrorCode, toApiError } from './console-errors.js';
import {
  checkParam,
  checkQueryOnce,
  EvalRunId,
  intParam,
  NonNegativeInt,
  PathSessionId,
  PositiveInt,
  StreamPositionText,
  TaskQueueParam,
} from './console-params.js';
import {
  AcceptedSchema,
  AgentListSchema,
  EvalRunViewSchema,
  ForkResponseSchema,
  OpenApiDocumentSchema,
  PendingApprovalsSchema,
  SessionDetailSchema,
  SessionEventsSchema,
  SessionListSchema,
  StepRequestSchema,
  TimelineSchema,
} from './console-responses.js';
import { consoleGuard } from './console-security.js';
import { pendingApproval } from './pending-approval.js';
import { respond } from './respond.js';
import { SessionStateViewSchema } from './state-view-schema.js';
import { liveStream } from './live-stream.js';
import { checkMessageAttachments } from './message-attachments.js';
import { openApiDocument } from './openapi-document.js';
import { queuedMessages } from './queued-messages.js';
import { OverviewMemo } from './overview-memo.js';
import { listSessions } from './session-list.js';
import { sessionSearchOf } from './session-search-params.js';
import { sessionTimeline } from './session-timeline.js';
import { staticFile } from './static-files.js';
import { stepRequest } from './step-request.js';
import { evalRunView } from './eval-run-view.js';

export interface ConsoleDeps {
  readonly store: SessionStore;
  /** The agents live workers serve (the store's agent catalog); absent: GET /api/agents lists none. */
  readonly agents?: Pick<AgentCatalog, 'list' | 'ttlMs'>;
  readonly channel: DeltaChannel;
  /** Null when Temporal is not reachable: reads still work, actions answer TEMPORAL_UNREACHABLE. */
  readonly sessions: SessionClient | null;
  /** How step requests are re-derived (the worker's provider profile, attachments). */
  readonly derive?: DeriveOptions;
  /** The workers' attachment store: a message citing an image it does not hold is refused (422). */
  readonly readAttachment?: ReadAttachment;
  /** The browser app's build (default: CONSOLE_UI_DIR). */
  readonly uiDir: string;
  /** Live stream timing (tests shorten it). */
  readonly live?: {
    readonly pollMs?: number;
    readonly statusEveryMs?: number;
    readonly heartbeatMs?: number;
    readonly retryMs?: number;
  };
}

export interface ConsoleAppOptions extends ConsoleDeps {
  readonly host: string;
  readonly port: () => number;
  readonly token: string | null;
}

export function createConsoleApp(options: ConsoleAppOptions): Hono {
  const { store, sessions } = options;
  const overviews = new OverviewMemo();
  const app = new Hono();
  app.use('*', consoleGuard({ host: options.host, port: options.port, token: options.token }));
  // After the guard: a caller it refuses gets its answer without the server reading the body first.
  app.use('*', consoleBodyLimit());
  app.use('/api/*', async (c, next) => {
    checkQueryOnce(c.req.url);
    await next();
    c.header('cache-control', 'no-store');
    c.header('x-content-type-options', 'nosniff');
  });
  app.onError((error, c) => {
    const { status, body } = toApiError(error, c.req.param('id'));
    return c.json(body, status as 400);
  });

  // A session id no store could hold is the caller's mistake, answered before any route reads the store.
  app.use('/api/sessions/:id/*', checkSessionId);
  app.use('/api/sessions/:id', checkSessionId);

  app.get(CONSOLE_ROUTES.openapi, (c) => respond(c, OpenApiDocumentSchema, openApiDocument()));

  app.get(CONSOLE_ROUTES.sessions, async (c) => {
    const search = sessionSearchOf((name) => c.req.query(name));
    return respond(c, SessionListSchema, await listSessions(store, sessions?.client ?? null, search, overviews));
  });

  app.get(CONSOLE_ROUTES.agents, async (c) => {
    const query = c.req.query('taskQueue');
    const taskQueue = query !== undefined ? checkParam(query, 'taskQueue', TaskQueueParam) : undefined;
    const agents = (await options.agents?.list(taskQueue !== undefined ? { taskQueue } : {})) ?? [];
    return respond(c, AgentListSchema, { agents, ttlMs: options.agents?.ttlMs ?? AGENT_CATALOG_TTL_MS });
  });

  app.get(CONSOLE_ROUTES.session, async (c) => {
    const id = c.req.param('id');
    const events = await store.read(id);
    const overview = sessionOverview(id, events);
    let state: SessionStateView | null = null;
    let stateUnavailable: string | null = null;
    const worker = sessions !== null ? await sessions.workerPresence(id) : null;
    const workerWarning = warningFor(sessions, id, worker);
    if (sessions === null) stateUnavailable = 'Temporal is not reachable';
    // The state query needs a worker too: without one it would only time out.
    else if (workerWarning !== null) stateUnavailable = `no worker is polling ${JSON.stringify(worker?.taskQueue)}`;
    else {
      try {
        state = await sessions.state(id);
      } catch (error) {
        stateUnavailable = toApiError(error, id).body.error.message;
      }
    }
    // A worker of another version may answer `state` in another shape: say so rather than fail the detail.
    const stateProblem = state !== null ? SessionStateViewSchema.safeParse(state).error : undefined;
    if (stateProblem !== undefined) {
      state = null;
      stateUnavailable = `the workflow's state answer is not one this console reads: ${payloadProblem(stateProblem)}`;
    }
    const { total: _total, ...usage } = overview.usage;
    const detail: SessionDetail = {
      sessionId: id,
      state,
      stateUnavailable,
      head: events.length === 0 ? 0 : (events[events.length - 1]?.seq ?? -1) + 1,
      turns: overview.turns,
      usage,
      cacheReadShare: overview.cacheReadShare,
      parentSessionId: overview.delegation?.parentSessionId ?? overview.parent?.sessionId ?? null,
      children: overview.subagents.map((s) => ({ callId: s.callId, sessionId: s.sessionId, ended: s.ended })),
      queued: queuedMessages(events),
      worker,
      workerWarning,
      pendingApproval: pendingApproval(state, await eventsWithApprovalRequest(store, id, state, events)),
    };
    return respond(c, SessionDetailSchema, detail);
  });

  app.get(CONSOLE_ROUTES.approvals, async (c) => {
    const id = c.req.param('id');
    const client = reachable(sessions);
    // No running workflow: nothing waits (and a session nobody has is a 404). A running one without a worker
    // cannot be asked (409, as approving it would be).
    if ((await client.workerPresence(id)) === null) {
      await store.head(id);
      return respond(c, PendingApprovalsSchema, { sessionId: id, pending: null } satisfies PendingApprovals);
    }
    const state = await (await withWorker(client, id)).state(id);
    // The log is read only for a waiting call (its arguments): a workflow may run before its log is opened.
    const events = state.pendingApproval === null ? [] : await store.read(id);
    const answer: PendingApprovals = { sessionId: id, pending: pendingApproval(state, events) };
    return respond(c, PendingApprovalsSchema, answer);
  });

  app.get(CONSOLE_ROUTES.events, async (c) => {
    const id = c.req.param('id');
    const from = intParam(c.req.query('from'), 'from', NonNegativeInt) ?? 0;
    const head = await store.head(id);
    const body: SessionEvents = { events: await store.read(id, from), head };
    return respond(c, SessionEventsSchema, body);
  });

  app.get(CONSOLE_ROUTES.timeline, async (c) => {
    const id = c.req.param('id');
    return respond(c, TimelineSchema, sessionTimeline(id, await store.read(id)));
  });

  app.get(CONSOLE_ROUTES.request, async (c) => {
    const id = c.req.param('id');
    const turn = intParam(c.req.param('turn'), 'turn', PositiveInt) ?? 1;
    const step = intParam(c.req.param('step'), 'step', PositiveInt) ?? 1;
    return respond(c, StepRequestSchema, await stepRequest(id, await store.read(id), turn, step, options.derive ?? {}));
  });

  app.get(CONSOLE_ROUTES.live, async (c) => {
    const id = c.req.param('id');
    // A browser's EventSource reconnects with the last event id it had; a first connection may name one.
    // The header wins, but both are checked: a request whose `from` breaks its pattern is refused either way.
    const header = c.req.header('last-event-id');
    const query = c.req.query('from');
    for (const given of [header, query]) {
      // Exactly the documented form: parsePosition also forgives spaces around it, which the document does not.
      if (given !== undefined && !StreamPositionText.safeParse(given).success) {
        throw new DhError(
          StreamPositionErrorCode.Invalid,
          `"${given.slice(0, 80)}" is not a stream position: expected <seq>:<delta> (e.g. 42:1187) or <seq>`,
        );
      }
    }
    const resume = header ?? query;
    const from = resume !== undefined ? parsePosition(resume) : START_POSITION;
    await store.head(id); // an unknown session is a 404 before the stream starts
    return liveStream(c, id, from, { store, channel: options.channel, sessions, ...options.live });
  });

  app.post(CONSOLE_ROUTES.messages, async (c) => {
    const id = c.req.param('id');
    const body = await bodyOf(c, MessageBody);
    if (options.readAttachment !== undefined) await checkMessageAttachments(body.content, options.readAttachment);
    const client = reachable(sessions);
    const source = body.source !== undefined ? { source: body.source } : {};
    if (body.kind === 'followup') await client.followup(id, body.content, source);
    else if (body.kind === 'steer') await client.steer(id, body.content, source);
    else await client.inject(id, body.content, source);
    return accepted(c, await workerWarning(client, id));
  });

  app.post(CONSOLE_ROUTES.interrupt, async (c) => {
    const id = c.req.param('id');
    const body = await bodyOf(c, InterruptBody);
    const client = reachable(sessions);
    await client.interrupt(id, body.reason);
    return accepted(c, await workerWarning(client, id));
  });

  app.post(CONSOLE_ROUTES.approve, async (c) => {
    const id = c.req.param('id');
    // The call id or its short id: the workflow resolves a short id against the call waiting.
    const callId = c.req.param('callId');
    const body = await bodyOf(c, ApprovalBody);
    const client = await withWorker(reachable(sessions), id);
    await client.approve(id, {
      callId,
      decision: body.decision,
      by: 'console',
      ...(body.reason !== undefined ? { reason: body.reason } : {}),
      ...(body.remember !== undefined ? { remember: body.remember } : {}),
    });
    return accepted(c);
  });

  app.post(CONSOLE_ROUTES.compact, async (c) => {
    const id = c.req.param('id');
    const body = await bodyOf(c, CompactBody);
    const client = await withWorker(reachable(sessions), id);
    await client.compact(id, body.prune === true ? { prune: true } : {});
    return accepted(c);
  });

  app.post(CONSOLE_ROUTES.fork, async (c) => {
    const id = c.req.param('id');
    const body = await bodyOf(c, ForkBody);
    const forkId = await forkSession(store, reachable(sessions), id, {
      atSeq: body.atSeq,
      ...(body.as !== undefined ? { as: body.as } : {}),
    });
    const warning = await workerWarning(reachable(sessions), forkId);
    const created: ForkResponse = { sessionId: forkId, ...(warning !== null ? { warning } : {}) };
    return respond(c, ForkResponseSchema, created, 201);
  });

  app.get(CONSOLE_ROUTES.evalRun, async (c) => {
    const runId = checkParam(c.req.param('runId'), 'runId', EvalRunId);
    return respond(c, EvalRunViewSchema, await evalRunView(sessions, store, runId));
  });

  app.all('/api/*', (c) => c.json(apiError(ConsoleErrorCode.NotFound, `no route ${c.req.method} ${c.req.path}`), 404));
  app.get('*', (c) => staticFile(options.uiDir, c.req.path));
  return app;
}

function accepted(c: Context, warning: ApiWarning | null = null): Response {
  const body: Accepted = { accepted: true, ...(warning !== null ? { warning } : {}) };
  return respond(c, AcceptedSchema, body, 202);
}

/** The NO_WORKER_POLLING warning for a session whose running workflow's queue no worker polls, else null. */
function warningFor(
  sessions: SessionClient | null,
  sessionId: string,
  presence: Awaited<ReturnType<SessionClient['workerPresence']>>,
): ApiWarning | null {
  if (sessions === null || presence === null || presence.pollers > 0) return null;
  const caller = { namespace: sessions.client.options.namespace, taskQueue: sessions.options.taskQueue };
  return { code: NO_WORKER_POLLING, message: noWorkerMessage(sessionId, presence, caller) };
}

async function workerWarning(sessions: SessionClient, sessionId: string): Promise<ApiWarning | null> {
  return warningFor(sessions, sessionId, await sessions.workerPresence(sessionId));
}

/** An update needs a worker to take it: without one, refuse at once (409) rather than time out. */
async function withWorker(sessions: SessionClient, sessionId: string): Promise<SessionClient> {
  const warning = await workerWarning(sessions, sessionId);
  if (warning !== null) throw new DhError(warning.code, warning.message, { sessionId });
  return sessions;
}

/**
 * The log read before the `state` query may predate the call it says waits: the step appends `approval/request`
 * before the workflow marks the call waiting, so a read after the query has it.
 */
async function eventsWithApprovalRequest(
  store: SessionStore,
  id: string,
  state: SessionStateView | null,
  events: readonly SessionEvent[],
): Promise<readonly SessionEvent[]> {
  const waiting = state?.pendingApproval?.callId;
  if (waiting === undefined) return events;
  const logged = events.some((e) => e.type === 'approval/request' && e.callId === waiting);
  return logged ? events : store.read(id);
}

async function checkSessionId(c: Context, next: () => Promise<void>): Promise<void> {
  const id = c.req.param('id');
  if (id !== undefined) checkParam(id, 'session id', PathSessionId);
  await next();
}

function reachable(sessions: SessionClient | null): SessionClient {
  if (sessions === null) throw new DhError('TEMPORAL_UNREACHABLE', 'Temporal is not reachable: actions need it');
  return sessions;
}

async function bodyOf<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch {
    throw new DhError(ConsoleErrorCode.BadRequest, 'the request body is not JSON');
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new DhError(ConsoleErrorCode.BadRequest, `invalid body: ${payloadProblem(parsed.error)}`);
  return parsed.data;
}
