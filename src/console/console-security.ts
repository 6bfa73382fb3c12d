// The console's request guard: DNS rebinding (the Host must be the server's own host:port or a loopback
// name), a method no route on the path answers (405), CSRF (state-changing requests need JSON and, when they
// carry an Origin, the server's own), and the bearer token every /api route requires when bound off loopback.
import { timingSafeEqual } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import type { MiddlewareHandler } from 'hono';
import { apiError, ConsoleErrorCode } from './console-errors.js';
import { allowedMethods } from './route-methods.js';

export interface GuardOptions {
  /** The host the server is bound to and its port (the port actually listened on). */
  readonly host: string;
  readonly port: () => number;
  /** Required as `Authorization: Bearer <token>` on /api routes; null on loopback. */
  readonly token: string | null;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_NAMES.has(host.toLowerCase()) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export function consoleGuard(options: GuardOptions): MiddlewareHandler {
  return async (c, next) => {
    const port = options.port();
    const hostHeader = c.req.header('host') ?? '';
    if (!allowedHost(hostHeader, options.host, port)) {
      return c.json(apiError(ConsoleErrorCode.ForbiddenHost, `host "${hostHeader}" is not this server`), 403);
    }
    const method = c.req.method.toUpperCase();
    // Before the CSRF checks: a PUT on a route's path is the wrong method, whatever its content type.
    const allowed = c.req.path.startsWith('/api/') ? allowedMethods(c.req.path) : null;
    if (allowed !== null && !allowed.includes(method)) {
      c.header('allow', allowed.join(', '));
      return c.json(
        apiError(ConsoleErrorCode.MethodNotAllowed, `${method} is not allowed on ${c.req.path}: ${allowed.join(', ')}`),
        405,
      );
    }
    if (method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS') {
      const origin = c.req.header('origin');
      if (origin !== undefined && !allowedOrigin(origin, hostHeader)) {
        return c.json(apiError(ConsoleErrorCode.ForbiddenOrigin, `origin "${origin}" may not change state`), 403);
      }
      const type = (c.req.header('content-type') ?? '').split(';')[0]?.trim().toLowerCase();
      if (type !== 'application/json') {
        return c.json(
          apiError(
            ConsoleErrorCode.UnsupportedMediaType,
            'state-changing requests must be Content-Type: application/json',
          ),
          415,
        );
      }
    }
    if (options.token !== null && c.req.path.startsWith('/api/')) {
      const auth = c.req.header('authorization') ?? '';
      const given = /^Bearer (.+)$/i.exec(auth)?.[1]?.trim() ?? '';
      if (!sameSecret(given, options.token)) {
        return c.json(
          apiError(ConsoleErrorCode.Unauthorized, 'this server requires Authorization: Bearer <token>'),
          401,
        );
      }
    }
    await next();
  };
}

function allowedHost(header: string, boundHost: string, port: number): boolean {
  const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(header.trim());
  if (!match) return false;
  const name = (match[1] ?? '').toLowerCase();
  const headerPort = match[2] !== undefined ? Number(match[2]) : 80;
  if (headerPort !== port) return false;
  if (isLoopbackHost(name)) return true;
  const bound = boundHost.includes(':') && !boundHost.startsWith('[') ? `[${boundHost}]` : boundHost;
  if (name === bound.toLowerCase()) return true;
  // Bound to every interface: the server's own names are its interfaces' addresses.
  return (boundHost === '0.0.0.0' || boundHost === '::') && interfaceAddresses().has(name);
}

function interfaceAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) out.add(info.family === 'IPv6' ? `[${info.address}]` : info.address);
  }
  return out;
}

/** The Origin must be this server as the browser reached it (same scheme-less host:port as the Host header). */
function allowedOrigin(origin: string, hostHeader: string): boolean {
  try {
    const url = new URL(origin);
    return url.protocol === 'http:' && url.host.toLowerCase() === hostHeader.trim().toLowerCase();
  } catch {
    return false;
  }
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
