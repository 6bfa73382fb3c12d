// The console's bound on request bodies, on the real stack: a body over CONSOLE_MAX_BODY_BYTES is answered
// 413 PAYLOAD_TOO_LARGE as JSON whether its length is declared, chunked or declared falsely, without the server
// reading on (the client offers 600 MiB and gives up past the bound plus what sockets buffer), and the server
// answers the next request as before.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiError } from '../../src/console/console-api.js';
import { CONSOLE_ROUTES } from '../../src/console/console-api.js';
import { CONSOLE_MAX_BODY_BYTES } from '../../src/console/console-body-limit.js';
import type { ConsoleServer } from '../../src/console/console-server.js';
import { ROUTE_METHODS } from '../../src/console/route-methods.js';
import { followupSignal } from '../../src/shared/session-messages.js';
import { MemoryDeltaChannel } from '../../src/streaming/memory-delta-channel.js';
import { sendOversizedBody, type OversizedRequest } from '../helpers/oversized-body.js';
import { startHarness, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { call, startTestConsole } from './console-client.js';

const MiB = 1024 * 1024;
/** What the issue sent: a body the old console buffered whole (RSS 217 MB → 1.37 GB) before answering 400. */
const OFFERED = 600 * MiB;
/**
 * Past the bound, a client may still have pushed what the two sockets buffer (tens of MiB on loopback) and
 * what the server's adapter drains before closing (at most 64 MiB): a server that read on would take more.
 */
const GIVE_UP = CONSOLE_MAX_BODY_BYTES + 96 * MiB;

describe('the console bounds request bodies', () => {
  let h: Harness;
  let server: ConsoleServer;
  const json = { 'content-type': 'application/json' };
  const messages = () => new URL('/api/sessions/limit-s/messages', server.url).toString();
  const oversized = (request: Omit<OversizedRequest, 'giveUpAfter' | 'url'> & { url?: string }) =>
    sendOversizedBody({ url: messages(), giveUpAfter: GIVE_UP, ...request });
  const expectTooLarge = (answer: Awaited<ReturnType<typeof sendOversizedBody>>) => {
    expect(answer.gaveUp, `the server read ${answer.sent} bytes without answering`).toBe(false);
    expect(answer.status).toBe(413);
    expect(answer.headers['content-type']).toContain('application/json');
    expect((JSON.parse(answer.body) as ApiError).error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(answer.sent).toBeLessThan(OFFERED);
  };

  beforeAll(async () => {
    h = await startHarness({ script: { mode: 'match', replies: [{ text: 'ok', repeat: 5 }] } });
    server = await startTestConsole(h, new MemoryDeltaChannel());
    const handle = await h.start('limit-s');
    await handle.signal(followupSignal, { content: 'hello' });
    await waitForTurnEnd(h.store, 'limit-s', 1);
  }, 90_000);
  afterAll(async () => {
    await server?.close();
    await h?.stop();
  });

  it('refuses a declared length over the bound at once, before the body', async () => {
    expectTooLarge(await oversized({ headers: json, framing: 'content-length', offered: OFFERED }));
    // The length lies upward: the answer comes though nothing follows the first bytes.
    expectTooLarge(await oversized({ headers: json, framing: 'content-length', declared: OFFERED, offered: 16 }));
  });

  it('refuses a chunked body (no Content-Length) once it passes the bound', async () => {
    expectTooLarge(await oversized({ headers: json, framing: 'chunked', offered: OFFERED }));
  });

  it('reads no more than a (lying) Content-Length below the bound says', async () => {
    // 1000 bytes of `a` are the body; what follows is no HTTP request, and the connection ends there (Node's
    // parser refuses it), long before the 64 MiB the client offers.
    const answer = await oversized({ headers: json, framing: 'content-length', declared: 1000, offered: 64 * MiB });
    expect(answer.gaveUp).toBe(false);
    expect(answer.sent).toBeLessThan(64 * MiB);
  });

  it('bounds every POST route, and a GET carries no body at all', async () => {
    const posts = Object.entries(ROUTE_METHODS).filter(([, method]) => method === 'POST');
    expect(posts.length).toBeGreaterThan(0);
    for (const [route] of posts) {
      const path = CONSOLE_ROUTES[route as keyof typeof CONSOLE_ROUTES]
        .replace(':id', 'limit-s')
        .replace(':callId', 'c1');
      const url = new URL(path, server.url).toString();
      expectTooLarge(
        await oversized({ url, headers: json, framing: 'chunked', offered: CONSOLE_MAX_BODY_BYTES + MiB }),
      );
    }
    // Refused from its headers and the connection closed: the client sends a first few bytes and waits.
    const get = new URL('/api/sessions', server.url).toString();
    expectTooLarge(
      await oversized({ url: get, method: 'GET', framing: 'content-length', declared: OFFERED, offered: 16 }),
    );
    expectTooLarge(await oversized({ url: get, method: 'GET', framing: 'chunked', offered: 16 }));
  });

  it('takes a body at the bound, and answers as before after the refusals', async () => {
    // Exactly the bound: read whole (a JSON string of `a`s is not a message, so the body schema refuses it).
    const answer = await oversized({ headers: json, framing: 'content-length', offered: CONSOLE_MAX_BODY_BYTES });
    expect(answer.status).toBe(400);
    expect((JSON.parse(answer.body) as ApiError).error.code).toBe('INVALID_PAYLOAD');
    expect((await call(server.url, '/api/sessions/limit-s')).status).toBe(200);
  });
});
