// A codec server (Temporal's remote codec protocol) so the Temporal Web UI and the `temporal` CLI can show
// encrypted payloads decoded: `POST …/decode` and `POST …/encode` take and return `{"payloads": [...]}`
// in protobuf JSON (metadata values and data in base64), with CORS for the UI's origin.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';
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

class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const { codec } = options;
  const origins = new Set(options.origins ?? []);
  const maxBodyBytes = options.maxBodyBytes ?? 16 * 1024 * 1024;

  const allowOrigin = (origin: string | undefined): boolean =>
    origin === undefined || origins.has('*') || origins.has(origin);

  const corsHeaders = (origin: string | undefined): Record<string, string> =>
    origin === undefined
      ? {}
      : {
          'access-control-allow-origin': origin,
          'access-control-allow-credentials': 'true',
          vary: 'Origin',
        };

  async function readBody(req: IncomingMessage): Promise<string> {
    const parts: Buffer[] = [];
    let size = 0;
    for await (const part of req) {
      size += (part as Buffer).length;
      if (size > maxBodyBytes) throw new HttpProblem(413, `the request body is larger than ${maxBodyBytes} bytes`);
      parts.push(part as Buffer);
    }
    return Buffer.concat(parts).toString('utf8');
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const origin = typeof req.headers.origin === 'string' ? req.headers.origin : undefined;
    if (!allowOrigin(origin)) throw new HttpProblem(403, `origin ${origin ?? ''} is not allowed (see --origin)`);
    const cors = corsHeaders(origin);
    const path = new URL(req.url ?? '/', 'http://codec.invalid').pathname.replace(/\/+$/, '');
    const operation = path.endsWith('/decode') ? 'decode' : path.endsWith('/encode') ? 'encode' : undefined;
    if (operation === undefined) throw new HttpProblem(404, 'not found: POST …/encode or …/decode');
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        ...cors,
        'access-control-allow-methods': 'POST, OPTIONS',
        'access-control-allow-headers':
          typeof req.headers['access-control-request-headers'] === 'string'
            ? req.headers['access-control-request-headers']
            : 'content-type, x-namespace, authorization',
        'access-control-max-age': '600',
      });
      res.end();
      return;
    }
    if (req.method !== 'POST') throw new HttpProblem(405, 'method not allowed: use POST');
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch (error) {
      if (error instanceof HttpProblem) throw error;
      throw new HttpProblem(400, 'the request body is not JSON');
    }
    const parsed = JsonPayloads.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new HttpProblem(
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
      throw new HttpProblem(400, error instanceof DhError ? error.message : `${operation} failed`);
    }
    res.writeHead(200, { ...cors, 'content-type': 'application/json' });
    res.end(JSON.stringify({ payloads: result.map(toJson) }));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const status = error instanceof HttpProblem ? error.status : 500;
      const message = error instanceof HttpProblem ? error.message : 'internal error';
      const origin = typeof req.headers.origin === 'string' ? req.headers.origin : undefined;
      res.writeHead(status, {
        ...(status !== 403 ? corsHeaders(origin) : {}),
        'content-type': 'application/json',
      });
      res.end(JSON.stringify({ error: message }));
    });
  });
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
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
