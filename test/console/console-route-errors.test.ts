// Every console route's refusals on the real stack (Temporal dev server, SQLite store, scripted provider):
// each code a route declares (route-errors.ts) is provoked through HTTP and answered with its 4xx status;
// a fork inside an open turn is 409 FORK_BOUNDARY; no malformed request to any route is answered 5xx.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiError, SessionList } from '../../src/console/console-api.js';
import { CONSOLE_ROUTES } from '../../src/console/console-api.js';
import type { AttachmentRef } from '../../src/core/index.js';
import type { ConsoleServer } from '../../src/console/console-server.js';
import { statusOf } from '../../src/console/console-errors.js';
import { CLIENT_ERRORS_BY_ROUTE, GUARD_ERRORS } from '../../src/console/route-errors.js';
import { closeSignal, followupSignal } from '../../src/shared/session-messages.js';
import { MemoryDeltaChannel } from '../../src/streaming/memory-delta-channel.js';
import { requestSent, sessionStart, stepStart, turnStart } from '../helpers/event-builders.js';
import { startHarness, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { call, post, startTestConsole } from './console-client.js';

type Route = keyof typeof CONSOLE_ROUTES;

const DOT_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const DOT: AttachmentRef = { id: '', mediaType: 'image/png', bytes: Buffer.from(DOT_PNG, 'base64').length };
const pictured = (attachment: AttachmentRef) => ({
  kind: 'followup',
  content: [{ type: 'image', attachment }],
});
interface Provoke {
  readonly route: Route;
  readonly code: string;
  readonly request: () => Promise<{ status: number; body: unknown }>;
}

describe('console route errors', () => {
  let h: Harness;
  let server: ConsoleServer;
  const api = (path: string) => call(server.url, path);
  const send = (path: string, body: unknown) => post(server.url, path, body);

  beforeAll(async () => {
    h = await startHarness({ script: { mode: 'match', replies: [{ text: 'ok', repeat: 50 }] } });
    server = await startTestConsole(h, new MemoryDeltaChannel());
    const done = await h.start('errs-done');
    await done.signal(followupSignal, { content: 'hello' });
    await waitForTurnEnd(h.store, 'errs-done', 1);
    const closed = await h.start('errs-closed');
    await closed.signal(closeSignal, {});
    await closed.result();
    // A log whose request cannot be derived (no request header): what a damaged or foreign log looks like.
    await h.store.create('errs-underivable', { createdAt: Date.now() });
    await h.store.append('errs-underivable', 0, [
      sessionStart('errs-underivable'),
      turnStart(1, 1),
      stepStart(2, 1, 1),
      requestSent(3, 1, 1),
    ]);
    // A running workflow on a queue no worker polls.
    await h.client.workflow.start('agentSession', {
      workflowId: 'session-errs-orphan',
      taskQueue: 'nobody-polls-this-queue',
      args: [{ sessionId: 'errs-orphan' }],
    });
  }, 90_000);
  afterAll(async () => {
    await h?.client.workflow
      .getHandle('session-errs-orphan')
      .terminate()
      .catch(() => undefined);
    await server?.close();
    await h?.stop();
  });

  it('gives every code a route declares a 4xx status', () => {
    for (const [route, codes] of Object.entries(CLIENT_ERRORS_BY_ROUTE)) {
      for (const code of [...codes, ...GUARD_ERRORS]) {
        expect(statusOf(code), `${route}: ${code}`).toBeGreaterThanOrEqual(400);
        expect(statusOf(code), `${route}: ${code}`).toBeLessThan(500);
      }
    }
  });

  it('answers each declared refusal of each route with its code and status, through HTTP', async () => {
    const turnStartSeq = (await h.store.read('errs-done')).find((e) => e.type === 'turn/start')?.seq ?? -1;
    const cases: Provoke[] = [
      { route: 'sessions', code: 'INVALID_PAYLOAD', request: () => api('/api/sessions?since=yesterday') },
      { route: 'sessions', code: 'PAGE_TOKEN_INVALID', request: () => api('/api/sessions?pageToken=s.!!') },
      { route: 'session', code: 'SESSION_NOT_FOUND', request: () => api('/api/sessions/errs-none') },
      { route: 'session', code: 'INVALID_PAYLOAD', request: () => api(`/api/sessions/${'a'.repeat(201)}`) },
      { route: 'events', code: 'SESSION_NOT_FOUND', request: () => api('/api/sessions/errs-none/events') },
      { route: 'events', code: 'INVALID_PAYLOAD', request: () => api('/api/sessions/errs-done/events?from=-1') },
      { route: 'timeline', code: 'SESSION_NOT_FOUND', request: () => api('/api/sessions/errs-none/timeline') },
      { route: 'timeline', code: 'INVALID_PAYLOAD', request: () => api(`/api/sessions/${'a'.repeat(201)}/timeline`) },
      { route: 'request', code: 'SESSION_NOT_FOUND', request: () => api('/api/sessions/errs-none/steps/1/1/request') },
      { route: 'request', code: 'INVALID_PAYLOAD', request: () => api('/api/sessions/errs-done/steps/0/1/request') },
      { route: 'request', code: 'STEP_NOT_FOUND', request: () => api('/api/sessions/errs-done/steps/7/1/request') },
      {
        route: 'request',
        code: 'REQUEST_UNDERIVABLE',
        request: () => api('/api/sessions/errs-underivable/steps/1/1/request'),
      },
      { route: 'live', code: 'SESSION_NOT_FOUND', request: () => api('/api/sessions/errs-none/live') },
      { route: 'live', code: 'INVALID_PAYLOAD', request: () => api(`/api/sessions/${'a'.repeat(201)}/live`) },
      { route: 'live', code: 'STREAM_POSITION_INVALID', request: () => api('/api/sessions/errs-done/live?from=x') },
      { route: 'approvals', code: 'SESSION_NOT_FOUND', request: () => api('/api/sessions/errs-none/approvals') },
      {
        route: 'approvals',
        code: 'INVALID_PAYLOAD',
        request: () => api(`/api/sessions/${'a'.repeat(201)}/approvals`),
      },
      { route: 'approvals', code: 'NO_WORKER_POLLING', request: () => api('/api/sessions/errs-orphan/approvals') },
      {
        route: 'messages',
        code: 'SESSION_NOT_FOUND',
        request: () => send('/api/sessions/errs-none/messages', { kind: 'followup', content: 'x' }),
      },
      {
        route: 'messages',
        code: 'SESSION_CLOSED',
        request: () => send('/api/sessions/errs-closed/messages', { kind: 'inject', content: 'x' }),
      },
      {
        route: 'messages',
        code: 'INVALID_PAYLOAD',
        request: () => send('/api/sessions/errs-done/messages', { kind: 'followup' }),
      },
      {
        route: 'messages',
        code: 'ATTACHMENT_NOT_FOUND',
        request: () => send('/api/sessions/errs-done/messages', pictured({ ...DOT, id: `sha256:${'0'.repeat(64)}` })),
      },
      {
        route: 'messages',
        code: 'ATTACHMENT_INVALID',
        request: async () => {
          const ref = await h.attachments.put(Buffer.from(DOT_PNG, 'base64'), 'image/png');
          return send('/api/sessions/errs-done/messages', pictured({ ...ref, mediaType: 'image/gif' }));
        },
      },
      { route: 'interrupt', code: 'SESSION_NOT_FOUND', request: () => send('/api/sessions/errs-none/interrupt', {}) },
      { route: 'interrupt', code: 'SESSION_CLOSED', request: () => send('/api/sessions/errs-closed/interrupt', {}) },
      {
        route: 'interrupt',
        code: 'INVALID_PAYLOAD',
        request: () => send('/api/sessions/errs-done/interrupt', { reason: 7 }),
      },
      {
        route: 'approve',
        code: 'SESSION_NOT_FOUND',
        request: () => send('/api/sessions/errs-none/approvals/c1', { decision: 'approve' }),
      },
      {
        route: 'approve',
        code: 'SESSION_CLOSED',
        request: () => send('/api/sessions/errs-closed/approvals/c1', { decision: 'approve' }),
      },
      {
        route: 'approve',
        code: 'INVALID_PAYLOAD',
        request: () => send('/api/sessions/errs-done/approvals/c1', { decision: 'maybe' }),
      },
      {
        route: 'approve',
        code: 'NO_PENDING_APPROVAL',
        request: () => send('/api/sessions/errs-done/approvals/c1', { decision: 'approve' }),
      },
      {
        route: 'approve',
        code: 'NO_WORKER_POLLING',
        request: () => send('/api/sessions/errs-orphan/approvals/c1', { decision: 'approve' }),
      },
      { route: 'compact', code: 'SESSION_NOT_FOUND', request: () => send('/api/sessions/errs-none/compact', {}) },
      { route: 'compact', code: 'SESSION_CLOSED', request: () => send('/api/sessions/errs-closed/compact', {}) },
      {
        route: 'compact',
        code: 'INVALID_PAYLOAD',
        request: () => send('/api/sessions/errs-done/compact', { prune: 1 }),
      },
      { route: 'compact', code: 'NO_WORKER_POLLING', request: () => send('/api/sessions/errs-orphan/compact', {}) },
      { route: 'fork', code: 'SESSION_NOT_FOUND', request: () => send('/api/sessions/errs-none/fork', { atSeq: 1 }) },
      {
        route: 'fork',
        code: 'INVALID_PAYLOAD',
        request: () => send('/api/sessions/errs-done/fork', { atSeq: 1, as: '../elsewhere' }),
      },
      {
        // Inside turn 1 (after its turn/start): the caller's choice of seq, not a server fault.
        route: 'fork',
        code: 'FORK_BOUNDARY',
        request: () => send('/api/sessions/errs-done/fork', { atSeq: turnStartSeq + 2 }),
      },
      {
        route: 'fork',
        code: 'SESSION_EXISTS',
        request: () => send('/api/sessions/errs-done/fork', { atSeq: 1, as: 'errs-closed' }),
      },
      { route: 'evalRun', code: 'INVALID_PAYLOAD', request: () => api('/api/evals/not%20an%20id') },
      { route: 'agents', code: 'INVALID_PAYLOAD', request: () => api('/api/agents?taskQueue=%00') },
      { route: 'evalRun', code: 'EVAL_NOT_FOUND', request: () => api('/api/evals/no-such-run') },
    ];
    // Every declared code has a case: a route cannot declare a refusal nobody has seen it give.
    for (const [route, codes] of Object.entries(CLIENT_ERRORS_BY_ROUTE)) {
      for (const code of codes) {
        expect(
          cases.some((c) => c.route === route && c.code === code),
          `no case provokes ${route} ${code}`,
        ).toBe(true);
      }
    }
    const answered: string[] = [];
    for (const c of cases) {
      const answer = await c.request();
      const error = (answer.body as ApiError).error;
      answered.push(`${c.route} ${c.code} → ${answer.status} ${error?.code ?? '(no error)'}`);
    }
    expect(answered).toEqual(cases.map((c) => `${c.route} ${c.code} → ${statusOf(c.code)} ${c.code}`));
  }, 120_000);

  it('answers no malformed request to any route with a 5xx', async () => {
    const junk = ['%00', '..', 'a'.repeat(300), '%E2%82', 'x y'];
    const answers: string[] = [];
    for (const bit of junk) {
      for (const path of Object.values(CONSOLE_ROUTES)) {
        const url = path.replace(/:[a-zA-Z]+/g, bit);
        const got = [await api(url), await send(url, { atSeq: bit, decision: bit, kind: bit, content: bit })];
        for (const g of got) if (g.status >= 500) answers.push(`${url} → ${g.status} ${JSON.stringify(g.body)}`);
      }
    }
    expect(answers).toEqual([]);
  }, 120_000);

  it('keeps to what the document states at its edges: methods, repeated, empty and oversized parameters', async () => {
    const answer = async (path: string, init: RequestInit = {}) => {
      const got = await call(server.url, path, init);
      return `${got.status} ${(got.body as ApiError | null)?.error?.code ?? ''} ${got.headers.get('allow') ?? ''}`.trim();
    };
    const cases: [string, RequestInit, string][] = [
      // A method the path does not list: 405 with Allow, whatever the content type.
      ['/api/sessions', { method: 'PUT' }, '405 METHOD_NOT_ALLOWED GET, HEAD'],
      ['/api/sessions/errs-done/messages', { method: 'GET' }, '405 METHOD_NOT_ALLOWED POST'],
      ['/api/sessions/errs-done/messages', { method: 'DELETE' }, '405 METHOD_NOT_ALLOWED POST'],
      ['/api/sessions/errs-done/approvals/c1', { method: 'PATCH' }, '405 METHOD_NOT_ALLOWED POST'],
      [
        '/api/evals/a-run',
        { method: 'POST', headers: { 'content-type': 'text/plain' } },
        '405 METHOD_NOT_ALLOWED GET, HEAD',
      ],
      // A parameter given twice is refused, not its first value taken.
      ['/api/sessions?limit=1&limit=2', {}, '400 INVALID_PAYLOAD'],
      ['/api/sessions/errs-done/events?from=1&from=2', {}, '400 INVALID_PAYLOAD'],
      // Integers as the document says: digits, at most 2^53 - 1.
      ['/api/sessions/errs-done/events?from=1e3', {}, '400 INVALID_PAYLOAD'],
      ['/api/sessions/errs-done/events?from=0x10', {}, '400 INVALID_PAYLOAD'],
      ['/api/sessions/errs-done/events?from=', {}, '400 INVALID_PAYLOAD'],
      ['/api/sessions/errs-done/events?from=9007199254740992', {}, '400 INVALID_PAYLOAD'],
      ['/api/sessions/errs-done/events?from=9007199254740991', {}, '200'],
      ['/api/sessions/errs-done/steps/1/9007199254740992/request', {}, '400 INVALID_PAYLOAD'],
      ['/api/sessions?limit=%205', {}, '400 INVALID_PAYLOAD'],
      // An empty position is none of the forms its pattern allows.
      ['/api/sessions/errs-done/live?from=', {}, '400 STREAM_POSITION_INVALID'],
      ['/api/sessions/errs-done/live', { headers: { 'last-event-id': '' } }, '400 STREAM_POSITION_INVALID'],
      // A valid Last-Event-ID does not excuse a `from` its pattern refuses (Schemathesis found it accepted).
      ['/api/sessions/errs-done/live?from=x', { headers: { 'last-event-id': '7:1' } }, '400 STREAM_POSITION_INVALID'],
      // Values the list's patterns refuse, and an empty enum.
      ['/api/sessions?status=', {}, '400 INVALID_PAYLOAD'],
      ['/api/sessions?since=2024-13-01', {}, '400 INVALID_PAYLOAD'],
      ['/api/sessions?since=', {}, '400 INVALID_PAYLOAD'],
      ['/api/sessions?since=2024-02-01T10:00Z&until=2024-03-01', {}, '200'],
      // A visibility page token this server did not write never reaches Temporal.
      ['/api/sessions?status=idle&pageToken=v.AAAAAAAAAAAAAAAAAAAAAAAAAAAA', {}, '400 PAGE_TOKEN_INVALID'],
      // A year Temporal cannot read is the nearest one it can: the same (no) sessions.
      ['/api/sessions?status=idle&until=905327230281582', {}, '200'],
      ['/api/evals/a%20run', {}, '400 INVALID_PAYLOAD'],
    ];
    const got: string[] = [];
    for (const [path, init] of cases) got.push(`${init.method ?? 'GET'} ${path} → ${await answer(path, init)}`);
    expect(got).toEqual(cases.map(([path, init, expected]) => `${init.method ?? 'GET'} ${path} → ${expected}`));
  });

  it('pages and searches the session list: by text in messages, by status (visibility), by date', async () => {
    for (const [i, word] of ['apple', 'banana', 'apple pie'].entries()) {
      const handle = await h.start(`errs-search-${i}`);
      await handle.signal(followupSignal, { content: `tell me about ${word}` });
      await waitForTurnEnd(h.store, `errs-search-${i}`, 1);
    }
    const apples = (await api('/api/sessions?q=APPLE')).body as SessionList;
    expect(apples.sessions.map((s) => s.sessionId).sort()).toEqual(['errs-search-0', 'errs-search-2']);
    // Two at a time through every session, then nothing left: no session twice, none lost.
    const seen: string[] = [];
    let token: string | null = null;
    let pages = 0;
    do {
      const page: SessionList = (await api(`/api/sessions?limit=2${token !== null ? `&pageToken=${token}` : ''}`))
        .body as SessionList;
      expect(page.sessions.length).toBeLessThanOrEqual(2);
      expect(page.source).toBe('store');
      seen.push(...page.sessions.map((s) => s.sessionId));
      token = page.nextPageToken;
      pages++;
    } while (token !== null && pages < 50);
    const all = ((await api('/api/sessions?limit=1000')).body as SessionList).sessions.map((s) => s.sessionId);
    expect(seen.sort()).toEqual([...all].sort());
    expect(new Set(seen).size).toBe(seen.length);
    // A status filter is a visibility list query, paged by Temporal's token.
    const idle: string[] = [];
    let first = (await api('/api/sessions?status=idle&limit=2')).body as SessionList;
    expect(first.source).toBe('visibility');
    idle.push(...first.sessions.map((s) => s.sessionId));
    while (first.nextPageToken !== null) {
      first = (await api(`/api/sessions?status=idle&limit=2&pageToken=${first.nextPageToken}`)).body as SessionList;
      idle.push(...first.sessions.map((s) => s.sessionId));
    }
    expect(idle).toEqual(expect.arrayContaining(['errs-done', 'errs-search-0', 'errs-search-1', 'errs-search-2']));
    expect(idle).not.toContain('errs-closed');
    const closed = (await api('/api/sessions?status=closed')).body as SessionList;
    expect(closed.sessions.map((s) => s.sessionId)).toContain('errs-closed');
    const future = (await api(`/api/sessions?since=${Date.now() + 3_600_000}`)).body as SessionList;
    expect(future.sessions).toEqual([]);
    const past = (await api(`/api/sessions?until=2000-01-01`)).body as SessionList;
    expect(past.sessions).toEqual([]);
  }, 120_000);
});
