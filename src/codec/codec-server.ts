// A codec server (Temporal's remote codec protocol) so the Temporal Web UI and the `temporal` CLI can show
// encrypted payloads decoded: `POST …/decode` and `POST …/encode` take and return `{"payloads": [...]}`
// in protobuf JSON (metadata values and data in base64), with CORS for the UI's origin; a body over the
// bound is 413 before it is read (Hono's bodyLimit on @hono/node-server).
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { z } from 'zod';
import { DhError } from '../core/errors.js';

export interface CodecServerOptions {
  readonly codec: PayloadCodec;
  /** 0 picks a free port (default 8888). */
  readonly port?: number;
  /**
   * Default 127.0.0.1. Whoever reaches the port can have any payload decrypted: keep it on loopback or
   * behind an authenticating proxy.
   */
  readonly host?: string;
  /**
   * Browser origins allowed to call it (the Temporal UI's, e.g. `http://localhost:8233`); `*` allows any.
   * A request carrying another `Origin` is refused; requests without one (the `temporal` CLI) are served.
   */
  readonly origins?: readonly string[];
  /** Largest request body (default 16 MiB). */
  readonly maxBodyBytes?: number;
}

export interface CodecServer {
  /** e.g. `http://127.0.0.1:8888` — what `--ui-codec-endpoint` / `--codec-endpoint` take. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export const DEFAULT_CODEC_SERVER_PORT = 8888;
/** A history page's payloads, with room to spare: far more than one request of the Web UI carries. */
export const DEFAULT_CODEC_MAX_BODY_BYTES = 16 * 1024 * 1024;

const operationOf = (path: string): 'decode' | 'encode' | undefined => {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed.endsWith('/decode') ? 'decode' : trimmed.endsWith('/encode') ? 'encode' : undefined;
};

/** Standard or URL-safe base64 (protobuf JSON parsers accept both). */
const Base64 = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'not base64');
/** One payload in protobuf JSON: bytes fields are base64 strings. */
const JsonPayload = z.object({
  metadata: z.record(z.string(), Base64).nullish(),
  data: Base64.nullish(),
});
const JsonPayloads = z.object({ payloads: z.array(JsonPayload) });
type JsonPayload = z.infer<typeof JsonPayload>;

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});
const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const { codec } = options;
  const origins = new Set(options.origins ?? []);
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_CODEC_MAX_BODY_BYTES;

  const corsHeaders = (origin: string | undefined): Record<string, string> =>
    origin === undefined
      ? {}
      : {
          'access-control-allow-origin': origin,
          'access-control-allow-credentials': 'true',
          vary: 'Origin',
        };
  /** An error answer, `{"error": message}`, with CORS headers for an allowed origin. */
  const problem = (
    c: { req: { header: (name: string) => string | undefined } },
    status: 400 | 403 | 404 | 405 | 413,
    message: string,
    headers: Record<string, string> = {},
  ): Response =>
    Response.json(
      { error: message },
      { status, headers: { ...(status !== 403 ? corsHeaders(c.req.header('origin')) : {}), ...headers } },
    );

  const app = new Hono();
  app.use('*', async (c, next) => {
    const origin = c.req.header('origin');
    if (origin !== undefined && !origins.has('*') && !origins.has(origin)) {
      return problem(c, 403, `origin ${origin} is not allowed (see --origin)`);
    }
    if (operationOf(c.req.path) === undefined) return problem(c, 404, 'not found: POST …/encode or …/decode');
    if (c.req.method === 'OPTIONS') {
      return c.body(null, 204, {
        ...corsHeaders(origin),
        'access-control-allow-methods': 'POST, OPTIONS',
        'access-control-allow-headers':
          c.req.header('access-control-request-headers') ?? 'content-type, x-namespace, authorization',
        'access-control-max-age': '600',
      });
    }
    if (c.req.method !== 'POST') return problem(c, 405, 'method not allowed: use POST', { allow: 'POST, OPTIONS' });
    await next();
  });
  // Bounded before it is read: a declared length over the bound at once, a chunked body as it arrives.
  app.use(
    '*',
    bodyLimit({
      maxSize: maxBodyBytes,
      onError: (c) => problem(c, 413, `the request body is larger than ${maxBodyBytes} bytes`),
    }),
  );
  app.post('*', async (c) => {
    const operation = operationOf(c.req.path) ?? 'decode';
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return problem(c, 400, 'the request body is not JSON');
    }
    const parsed = JsonPayloads.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return problem(
        c,
        400,
        `expected {"payloads": [{"metadata": {…base64}, "data": base64}]}: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`.trim(),
      );
    }
    const payloads = parsed.data.payloads.map(fromJson);
    let result: Payload[];
    try {
      result = operation === 'decode' ? await codec.decode(payloads) : await codec.encode(payloads);
    } catch (error) {
      // Codec errors say which key or payload failed, never key material.
      return problem(c, 400, error instanceof DhError ? error.message : `${operation} failed`);
    }
    return c.json({ payloads: result.map(toJson) }, 200, corsHeaders(c.req.header('origin')));
  });
  app.onError((_error, c) => c.json({ error: 'internal error' }, 500));

  const server = createAdaptorServer({ fetch: app.fetch });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DEFAULT_CODEC_SERVER_PORT, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    close: () => {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        if ('closeAllConnections' in server) server.closeAllConnections();
      });
      return closing;
    },
  };
}
