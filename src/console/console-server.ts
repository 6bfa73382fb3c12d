// Starts the web console: the Hono app on a Node HTTP server bound to a host (127.0.0.1 by default) and
// port (0: any free one). Off loopback the caller must pass a token (see ui-token.ts).
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { DhError } from '../core/index.js';
import { createConsoleApp, type ConsoleDeps } from './console-app.js';
import { isLoopbackHost } from './console-security.js';

export const DEFAULT_UI_HOST = '127.0.0.1';
export const DEFAULT_UI_PORT = 7788;

export interface ConsoleServerOptions extends ConsoleDeps {
  readonly host?: string;
  readonly port?: number;
  /** Required off loopback; ignored on loopback. */
  readonly token?: string | null;
}

export interface ConsoleServer {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Whether /api routes require the bearer token (bound off loopback). */
  readonly requiresToken: boolean;
  close(): Promise<void>;
}

export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServer> {
  const host = options.host ?? DEFAULT_UI_HOST;
  const loopback = isLoopbackHost(host);
  const token = loopback ? null : (options.token ?? null);
  if (!loopback && (token === null || token === '')) {
    throw new DhError('UI_TOKEN_REQUIRED', `the console bound to ${host} needs a token (DH_UI_TOKEN)`);
  }
  let port = options.port ?? DEFAULT_UI_PORT;
  const app = createConsoleApp({ ...options, host, port: () => port, token });
  const server = createAdaptorServer({
    fetch: app.fetch,
    hostname: host,
    // Node's 16 KiB would answer 431 to a request the document allows: a page token of 4096 characters of any
    // kind, percent-encoded, is up to 48 KiB (and it is refused 400 by the route, as the document says).
    serverOptions: { maxHeaderSize: 64 * 1024 },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/`,
    host,
    port,
    requiresToken: token !== null,
    close: () =>
      new Promise<void>((resolve) => {
        // Live streams hold their connections open: end them, or close would wait for the clients.
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
