// GET /api/openapi.json: an OpenAPI 3.1 document of every console route. Request bodies and the session
// workflow's message payloads are generated from their zod schemas the way `npm run schemas` generates
// schemas/*.json (test/console/console-openapi.test.ts keeps the two equal).
import { z } from 'zod';
import {
  ApprovePayload,
  CloseSignalPayload,
  InterruptSignalPayload,
  MessageSignalPayload,
  SendUpdatePayload,
} from '../shared/session-messages.js';
import { ApprovalBody, CompactBody, ForkBody, InterruptBody, MessageBody } from './console-bodies.js';
import { CONSOLE_ROUTES } from './console-api.js';
import { statusOf } from './console-errors.js';
import { LISTED_STATUSES } from './session-search-params.js';
import { CLIENT_ERRORS_BY_ROUTE, SERVER_FAULTS } from './route-errors.js';

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

export function jsonSchemaOf(schema: z.ZodType): Schema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input' }) as Schema;
  return rest;
}

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Schema, description: string): Schema => ({
  description,
  content: { 'application/json': { schema } },
});
type Route = keyof typeof CONSOLE_ROUTES;
/**
 * A route's error responses, from what it refuses a caller with (route-errors.ts), the guard's refusals (a
 * POST's too) and the server faults, each status naming its codes: the document cannot drift from the code.
 */
const errors = (route: Route, post = false): Record<string, Schema> => {
  const guard = ['UNAUTHORIZED', 'FORBIDDEN_HOST', ...(post ? ['FORBIDDEN_ORIGIN', 'UNSUPPORTED_MEDIA_TYPE'] : [])];
  const byStatus = new Map<number, string[]>();
  for (const code of [...CLIENT_ERRORS_BY_ROUTE[route], ...guard, ...SERVER_FAULTS]) {
    byStatus.set(statusOf(code), [...(byStatus.get(statusOf(code)) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus]
      .sort(([a], [b]) => a - b)
      .map(([status, codes]) => [String(status), json(ref('ApiError'), `ApiError: ${codes.join(', ')}`)]),
  );
};
const sessionId = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
const toPath = (route: string): string => route.replace(/:([a-zA-Z]+)/g, '{$1}');

function action(route: Route, summary: string, body: string, ok: Schema, status = '202'): Schema {
  return {
    post: {
      summary,
      parameters: [sessionId],
      requestBody: { required: true, ...json(ref(body), body) },
      responses: {
        [status]: json(ok, status === '202' ? 'Accepted' : 'Created'),
        ...errors(route, true),
      },
    },
  };
}

const OBJECT: Schema = { type: 'object' };

export function openApiDocument(): Schema {
  const accepted = ref('Accepted');
  const paths: Record<string, Schema> = {
    [CONSOLE_ROUTES.openapi]: { get: { summary: 'This document', responses: { '200': json(OBJECT, 'OpenAPI 3.1') } } },
    [CONSOLE_ROUTES.sessions]: {
      get: {
        summary: 'Sessions, newest first, subagents under their parents',
        parameters: [
          { name: 'status', in: 'query', required: false, schema: { enum: [...LISTED_STATUSES] } },
          {
            name: 'q',
            in: 'query',
            required: false,
            description: 'Text the id or the messages contain',
            schema: { type: 'string', maxLength: 200 },
          },
          {
            name: 'since',
            in: 'query',
            required: false,
            description: 'Started at or after (ISO 8601 or epoch ms)',
            schema: { type: 'string' },
          },
          {
            name: 'until',
            in: 'query',
            required: false,
            description: 'Started at or before (ISO 8601 or epoch ms)',
            schema: { type: 'string' },
          },
          { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000 } },
          {
            name: 'pageToken',
            in: 'query',
            required: false,
            description: "A page's nextPageToken",
            schema: { type: 'string' },
          },
        ],
        responses: { '200': json(OBJECT, 'SessionList'), ...errors('sessions') },
      },
    },
    [toPath(CONSOLE_ROUTES.session)]: {
      get: {
        summary: "What the log adds up to, and the workflow's state",
        parameters: [sessionId],
        responses: { '200': json(OBJECT, 'SessionDetail'), ...errors('session') },
      },
    },
    [toPath(CONSOLE_ROUTES.events)]: {
      get: {
        summary: 'The log from a seq',
        parameters: [
          sessionId,
          { name: 'from', in: 'query', required: false, schema: { type: 'integer', minimum: 0 } },
        ],
        responses: { '200': json(OBJECT, 'SessionEvents'), ...errors('events') },
      },
    },
    [toPath(CONSOLE_ROUTES.timeline)]: {
      get: {
        summary: 'Turns and their model steps',
        parameters: [sessionId],
        responses: { '200': json(OBJECT, 'Timeline'), ...errors('timeline') },
      },
    },
    [toPath(CONSOLE_ROUTES.request)]: {
      get: {
        summary: "A step's request re-derived from the log, checked against its recorded digest, and its diff",
        parameters: [
          sessionId,
          { name: 'turn', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } },
          { name: 'step', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } },
        ],
        responses: { '200': json(OBJECT, 'StepRequest'), ...errors('request') },
      },
    },
    [toPath(CONSOLE_ROUTES.live)]: {
      get: {
        summary:
          'Server-sent events: event, text, usage, limiter-wait, stalled and status messages; each id is a stream position',
        parameters: [
          sessionId,
          {
            name: 'from',
            in: 'query',
            required: false,
            description: 'Continue right after the message with this id (`<seq>:<delta>`, or a bare seq)',
            schema: { type: 'string', pattern: '^\\d+(:\\d+)?$' },
          },
          {
            name: 'Last-Event-ID',
            in: 'header',
            required: false,
            description: 'As `from`; sent by EventSource clients when they reconnect (takes precedence)',
            schema: { type: 'string', pattern: '^\\d+(:\\d+)?$' },
          },
        ],
        responses: {
          '200': {
            description: 'LiveMessage stream',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          ...errors('live'),
        },
      },
    },
    [toPath(CONSOLE_ROUTES.messages)]: action(
      'messages',
      'Send a followup, steer or inject',
      'MessageRequest',
      accepted,
    ),
    [toPath(CONSOLE_ROUTES.interrupt)]: action('interrupt', 'Interrupt the running step', 'InterruptRequest', accepted),
    [toPath(CONSOLE_ROUTES.compact)]: action('compact', 'Compact at the next boundary', 'CompactRequest', accepted),
    [toPath(CONSOLE_ROUTES.fork)]: action(
      'fork',
      'Fork the session at a seq',
      'ForkRequest',
      ref('ForkResponse'),
      '201',
    ),
    [toPath(CONSOLE_ROUTES.evalRun)]: {
      get: {
        summary: 'A dh eval run: its status, its progress while it runs, its report once it completed',
        parameters: [{ name: 'runId', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { '200': json(OBJECT, 'EvalRunView'), ...errors('evalRun') },
      },
    },
  };
  const approve = action('approve', 'Approve or deny a tool call waiting for approval', 'ApprovalRequest', accepted);
  const approvePost = approve.post as Schema;
  approvePost.parameters = [
    sessionId,
    {
      name: 'callId',
      in: 'path',
      required: true,
      description: "the waiting tool call's id, or its 5-character short id",
      schema: { type: 'string' },
    },
  ];
  paths[toPath(CONSOLE_ROUTES.approve)] = approve;
  return {
    openapi: '3.1.0',
    info: {
      title: 'durable-harness web console API',
      version: '1',
      description:
        'The HTTP API behind `dh ui`. Off loopback every /api route needs `Authorization: Bearer <token>`. ' +
        'The `*.signal` / `*.update` schemas are the session workflow message payloads (schemas/*.json).',
    },
    security: [{}, { bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        ApiError: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: { code: { type: 'string' }, message: { type: 'string' } },
            },
          },
        },
        Accepted: {
          type: 'object',
          required: ['accepted'],
          properties: { accepted: { const: true }, warning: ref('ApiWarning') },
        },
        ForkResponse: {
          type: 'object',
          required: ['sessionId'],
          properties: { sessionId: { type: 'string' }, warning: ref('ApiWarning') },
        },
        ApiWarning: {
          type: 'object',
          required: ['code', 'message'],
          properties: { code: { type: 'string' }, message: { type: 'string' } },
        },
        MessageRequest: jsonSchemaOf(MessageBody),
        InterruptRequest: jsonSchemaOf(InterruptBody),
        ApprovalRequest: jsonSchemaOf(ApprovalBody),
        CompactRequest: jsonSchemaOf(CompactBody),
        ForkRequest: jsonSchemaOf(ForkBody),
        ...Object.fromEntries(Object.entries(MESSAGE_PAYLOAD_SCHEMAS).map(([name, s]) => [name, jsonSchemaOf(s)])),
      },
    },
  };
}
