// Calls the console API with the bearer token; a failure keeps the API's own `{error:{code,message}}`
// so the page can show it exactly as the server said it.
import type { ApiError } from '../../src/console/console-api.js';
import { noteTokenRequired, readToken } from './token-store.js';

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
  /** The error as the page shows it. */
  describe(): string {
    return `${this.code}: ${this.message}`;
  }
}

/** Fills `:name` placeholders of a CONSOLE_ROUTES path. */
export function routePath(route: string, params: Record<string, string | number>): string {
  return route.replace(/:([a-zA-Z]+)/g, (_, name: string) => encodeURIComponent(String(params[name] ?? '')));
}

export function authHeaders(): Record<string, string> {
  const token = readToken();
  return token === '' ? {} : { authorization: `Bearer ${token}` };
}

async function call<T>(path: string, init: RequestInit): Promise<T> {
  // Relative to the page: the app may be served under a prefix.
  const response = await fetch(`.${path}`, { ...init, headers: { ...authHeaders(), ...init.headers } });
  if (response.status === 401) noteTokenRequired();
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    throw new ApiFailure(response.status, `HTTP_${response.status}`, text.slice(0, 500));
  }
  if (!response.ok) {
    const error = (body as Partial<ApiError> | null)?.error;
    if (error !== undefined) throw new ApiFailure(response.status, error.code, error.message);
    throw new ApiFailure(response.status, `HTTP_${response.status}`, text.slice(0, 500));
  }
  return body as T;
}

export function apiGet<T>(path: string): Promise<T> {
  return call<T>(path, { method: 'GET' });
}

export function apiPost<T>(path: string, body: unknown): Promise<T> {
  return call<T>(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body ?? {}),
  });
}

export function describeError(error: unknown): string {
  if (error instanceof ApiFailure) return error.describe();
  return error instanceof Error ? error.message : String(error);
}
