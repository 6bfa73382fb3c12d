// GET /api/openapi.json: an OpenAPI 3.1 document of every console route, generated from the zod schemas the
// server itself reads and answers with (parameters, bodies, responses), so the two cannot disagree. Message
// payloads are generated the way `npm run schemas` writes schemas/*.json (the OpenAPI test keeps them equal).
import { z } from 'zod';
import {
  ApprovePayload,
  CloseSignalPayload,
  InterruptSignalPayload,
  MessageSignalPayload,
  SendUpdatePayload,
} from '../shared/session-messages.js';
import { CONSOLE_MAX_BODY_BYTES } from './console-body-limit.js';
import { ApprovalBody, CompactBody, ForkBody, InterruptBody, MessageBody } from './console-bodies.js';
import { CONSOLE_ROUTES } from './console-api.js';
import { statusOf } from './console-errors.js';
import {
  EvalRunId,
  NonNegativeInt,
  PathSessionId,
  PositiveInt,
  StreamPositionText,
  TaskQueueParam,
} from './console-params.js';
import {
  AcceptedSchema,
  AgentListSchema,
  ApiErrorSchema,
  ApiWarningSchema,
  EvalRunViewSchema,
  ForkResponseSchema,
  LiveMessageSchema,
  OpenApiDocumentSchema,
  PendingApprovalsSchema,
  SessionDetailSchema,
  SessionEventsSchema,
  SessionListSchema,
  StepRequestSchema,
  TimelineSchema,
} from './console-responses.js';
import { CLIENT_ERRORS_BY_ROUTE, SERVER_FAULTS } from './route-errors.js';
import { ROUTE_METHODS, type ConsoleRoute } from './route-methods.js';
import { SESSION_LIST_PARAMS } from './session-search-params.js';

type Schema = Record<string, unknown>;

/** The workflow's message payloads by the name of their schemas/*.json file (without `.json`). */
export const MESSAGE_PAYLOAD_SCHEMAS: Readonly<Record<string, z.ZodType>> = {
  'followup.signal': MessageSignalPayload,
  'steer.signal': MessageSignalPayload,
  'inject.signal': MessageSignalPayload,
  'interrupt.signal': InterruptSignalPayload,
  'close.signal': CloseSignalPayload,
  'send.update': SendUpdatePayload,
  'approve.update': ApprovePayload,
};

const REQUEST_BODIES: Readonly<Record<string, z.ZodType>> = {
  MessageRequest: MessageBody,
  InterruptRequest: InterruptBody,
  ApprovalRequest: ApprovalBody,
  CompactRequest: CompactBody,
  ForkRequest: ForkBody,
};

const RESPONSES: Readonly<Record<string, z.ZodType>> = {
  ApiError: ApiErrorSchema,
  Accepted: AcceptedSchema,
  ForkResponse: ForkResponseSchema,
  SessionList: SessionListSchema,
  AgentList: AgentListSchema,
  SessionDetail: SessionDetailSchema,
  PendingApprovals: PendingApprovalsSchema,
  SessionEvents: SessionEventsSchema,
  Timeline: TimelineSchema,
  StepRequest: StepRequestSchema,
  EvalRunView: EvalRunViewSchema,
  LiveMessage: LiveMessageSchema,
  OpenApiDocument: OpenApiDocumentSchema,
};

export function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output' = 'input'): Schema {
  // `any` for what JSON Schema cannot say (StepRequest's body is any JSON value but undefined).
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Schema;
  return rest;
}

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Schema, description: string): Schema => ({
  description,
  content: { 'application/json': { schema } },
});

/**
 * The schemas of `named` as components; what a schema keeps in `$defs` (a recursive JSON value) becomes a
 * component of its own, since a `#/$defs/…` reference inside the document would point at its root.
 */
function components(named: Readonly<Record<string, z.ZodType>>, io: 'input' | 'output'): Record<string, Schema> {
  const out: Record<string, Schema> = {};
  for (const [name, schema] of Object.entries(named)) {
    const { $defs, ...generated } = jsonSchemaOf(schema, io) as Schema & { $defs?: Record<string, Schema> };
    const renamed = new Map(Object.keys($defs ?? {}).map((def) => [def, `${name}_${def.replace(/^_+/, '')}`]));
    const relink = (node: Schema): Schema =>
      JSON.parse(JSON.stringify(node), (key, value: unknown) =>
        key === '$ref' && typeof value === 'string' && value.startsWith('#/$defs/')
          ? `#/components/schemas/${renamed.get(value.slice('#/$defs/'.length)) ?? value}`
          : value,
      ) as Schema;
    out[name] = relink(generated);
    for (const [def, body] of Object.entries($defs ?? {})) out[renamed.get(def) ?? def] = relink(body);
  }
  return out;
}

/**
 * A route's error responses, from what it refuses a caller with (route-errors.ts), the guard's refusals (a
 * POST's too) and the server faults, each status naming its codes: the document cannot drift from the code.
 */
function errors(route: ConsoleRoute): Record<string, Schema> {
  const post = ROUTE_METHODS[route] === 'POST';
  const guard = [
    'UNAUTHORIZED',
    'FORBIDDEN_HOST',
    'PAYLOAD_TOO_LARGE',
    ...(post ? ['FORBIDDEN_ORIGIN', 'UNSUPPORTED_MEDIA_TYPE'] : []),
  ];
  const byStatus = new Map<number, string[]>();
  for (const code of [...CLIENT_ERRORS_BY_ROUTE[route], ...guard, ...SERVER_FAULTS]) {
    byStatus.set(statusOf(code), [...(byStatus.get(statusOf(code)) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus]
      .sort(([a], [b]) => a - b)
      .map(([status, codes]) => [String(status), json(ref('ApiError'), `ApiError: ${codes.join(', ')}`)]),
  );
}

const param = (name: string, where: 'path' | 'query' | 'header', schema: z.ZodType, description?: string) => ({
  name,
  in: where,
  required: where === 'path',
  ...(description !== undefined ? { description } : {}),
  schema: jsonSchemaOf(schema),
});
const sessionId = param('id', 'path', PathSessionId, 'A session id (1-200 characters, no NUL)');

/**
 * One event of the live stream, as OpenAPI 3.1 describes an event stream (a schema per event): its `event` is
 * the message's type, its `data` the LiveMessage as JSON, its `id` the stream position after it.
 */
const LIVE_EVENT: Schema = {
  type: 'object',
  required: ['event', 'data'],
  additionalProperties: false,
  properties: {
    event: { enum: LiveMessageSchema.options.map((option) => option.shape.type.value) },
    data: { type: 'string', contentMediaType: 'application/json', contentSchema: ref('LiveMessage') },
    id: jsonSchemaOf(StreamPositionText),
    retry: { type: 'integer', minimum: 0 },
  },
};

interface Operation {
  readonly summary: string;
  readonly parameters?: readonly Schema[];
  /** The request body's component name (POST routes). */
  readonly body?: string;
  /** The success status and its response component. */
  readonly ok: readonly [status: '200' | '201' | '202', component: string];
  readonly extra?: Schema;
}

const LIVE_FROM = 'Continue right after the message with this id (`<seq>:<delta>`, or a bare seq)';

const OPERATIONS: Readonly<Record<ConsoleRoute, Operation>> = {
  openapi: { summary: 'This document', ok: ['200', 'OpenApiDocument'] },
  sessions: {
    summary: 'Sessions, newest first, subagents under their parents',
    parameters: Object.entries(SESSION_LIST_PARAMS).map(([name, p]) => param(name, 'query', p.schema, p.description)),
    ok: ['200', 'SessionList'],
  },
  session: {
    summary: "What the log adds up to, the workflow's state and the tool call waiting for approval",
    parameters: [sessionId],
    ok: ['200', 'SessionDetail'],
  },
  events: {
    summary: 'The log from a seq',
    parameters: [sessionId, param('from', 'query', NonNegativeInt, 'The first seq to answer (default 0)')],
    ok: ['200', 'SessionEvents'],
  },
  timeline: { summary: 'Turns and their model steps', parameters: [sessionId], ok: ['200', 'Timeline'] },
  request: {
    summary: "A step's request re-derived from the log, checked against its recorded digest, and its diff",
    parameters: [sessionId, param('turn', 'path', PositiveInt), param('step', 'path', PositiveInt)],
    ok: ['200', 'StepRequest'],
  },
  live: {
    summary:
      'Server-sent events: event, text, usage, limiter-wait, stalled and status messages; each id is a stream position',
    parameters: [
      sessionId,
      param('from', 'query', StreamPositionText, LIVE_FROM),
      param(
        'Last-Event-ID',
        'header',
        StreamPositionText,
        'As `from`; sent by EventSource clients when they reconnect (takes precedence)',
      ),
    ],
    ok: ['200', ''],
    extra: { '200': { description: 'LiveMessage events', content: { 'text/event-stream': { schema: LIVE_EVENT } } } },
  },
  approvals: {
    summary:
      'The tool call waiting for approval: its id, its short id, the tool and its arguments (decide it with POST …/approvals/{callId})',
    parameters: [sessionId],
    ok: ['200', 'PendingApprovals'],
  },
  messages: {
    summary: 'Send a followup, steer or inject',
    parameters: [sessionId],
    body: 'MessageRequest',
    ok: ['202', 'Accepted'],
  },
  interrupt: {
    summary: 'Interrupt the running step',
    parameters: [sessionId],
    body: 'InterruptRequest',
    ok: ['202', 'Accepted'],
  },
  approve: {
    summary: 'Approve or deny the tool call waiting for approval, named by its id or its short id',
    parameters: [
      sessionId,
      {
        name: 'callId',
        in: 'path',
        required: true,
        description:
          "The waiting tool call's id, or its 5-character short id (both in GET …/approvals and the session's pendingApproval)",
        schema: jsonSchemaOf(ApprovePayload.shape.callId),
      },
    ],
    body: 'ApprovalRequest',
    ok: ['202', 'Accepted'],
  },
  compact: {
    summary: 'Compact at the next boundary',
    parameters: [sessionId],
    body: 'CompactRequest',
    ok: ['202', 'Accepted'],
  },
  fork: {
    summary: 'Fork the session at a seq',
    parameters: [sessionId],
    body: 'ForkRequest',
    ok: ['201', 'ForkResponse'],
  },
  evalRun: {
    summary: 'A dh eval run: its status, its progress while it runs, its report once it completed',
    parameters: [param('runId', 'path', EvalRunId)],
    ok: ['200', 'EvalRunView'],
  },
  agents: {
    summary:
      'The agents live workers serve, by task queue, name and version, with how many workers serve each (the agent catalog)',
    parameters: [param('taskQueue', 'query', TaskQueueParam, "Only this task queue's agents")],
    ok: ['200', 'AgentList'],
  },
};

const BODY_LIMIT = `At most ${CONSOLE_MAX_BODY_BYTES} bytes; a larger body is refused with 413 PAYLOAD_TOO_LARGE before it is read.`;

function operation(route: ConsoleRoute, op: Operation): Schema {
  const [status, component] = op.ok;
  return {
    summary: op.summary,
    ...(op.parameters !== undefined ? { parameters: op.parameters } : {}),
    ...(op.body !== undefined
      ? { requestBody: { required: true, ...json(ref(op.body), `${op.body}. ${BODY_LIMIT}`) } }
      : {}),
    responses: { ...(op.extra ?? { [status]: json(ref(component), component) }), ...errors(route) },
  };
}

export function openApiDocument(): Schema {
  const paths: Record<string, Schema> = {};
  for (const route of Object.keys(OPERATIONS) as ConsoleRoute[]) {
    const path = CONSOLE_ROUTES[route].replace(/:([a-zA-Z]+)/g, '{$1}');
    paths[path] = { ...paths[path], [ROUTE_METHODS[route].toLowerCase()]: operation(route, OPERATIONS[route]) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'durable-harness web console API',
      version: '1',
      description:
        'The HTTP API behind `dh ui`. Off loopback every /api route needs `Authorization: Bearer <token>`. ' +
        `Request bodies are at most ${CONSOLE_MAX_BODY_BYTES} bytes (larger: 413 PAYLOAD_TOO_LARGE); a method a ` +
        'path does not list is 405 METHOD_NOT_ALLOWED with `Allow`; a query parameter given twice is 400. ' +
        'The `*.signal` / `*.update` schemas are the session workflow message payloads (schemas/*.json).',
    },
    security: [{}, { bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        ...components(RESPONSES, 'output'),
        ...components(REQUEST_BODIES, 'input'),
        ApiWarning: jsonSchemaOf(ApiWarningSchema, 'output'),
        ...Object.fromEntries(Object.entries(MESSAGE_PAYLOAD_SCHEMAS).map(([name, s]) => [name, jsonSchemaOf(s)])),
      },
    },
  };
}
