// The one method each console route answers, and the methods a request path allows: any other method on a
// route's path is 405 with `Allow` (RFC 9110), never a 404 or a content-type refusal.
import type { CONSOLE_ROUTES } from './console-api.js';
import { CONSOLE_ROUTES as ROUTES } from './console-api.js';

export type ConsoleRoute = keyof typeof CONSOLE_ROUTES;

export const ROUTE_METHODS: Readonly<Record<ConsoleRoute, 'GET' | 'POST'>> = {
  openapi: 'GET',
  sessions: 'GET',
  session: 'GET',
  events: 'GET',
  timeline: 'GET',
  request: 'GET',
  live: 'GET',
  approvals: 'GET',
  messages: 'POST',
  interrupt: 'POST',
  approve: 'POST',
  compact: 'POST',
  fork: 'POST',
  evalRun: 'GET',
  agents: 'GET',
};

const MATCHERS = (Object.keys(ROUTES) as ConsoleRoute[]).map((route) => ({
  route,
  // A `:param` is one non-empty path segment, as the router matches it.
  pattern: new RegExp(`^${ROUTES[route].replace(/:[a-zA-Z]+/g, '[^/]+')}$`),
}));

/** The methods a path allows (GET brings HEAD), or null when no route has this path. */
export function allowedMethods(path: string): string[] | null {
  const methods = MATCHERS.filter((m) => m.pattern.test(path)).map((m) => ROUTE_METHODS[m.route]);
  if (methods.length === 0) return null;
  return [...new Set(methods.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m])))];
}
