// An HTTP error answer in the OpenAI error-body shape `{error: {message, type, param, code}}`, which
// DeepSeek shares. Built as data so validation stays a pure function.
import type { ErrorBody } from './chat-completion-response.js';

export interface ApiError {
  readonly status: number;
  readonly body: ErrorBody;
  readonly headers?: Readonly<Record<string, string>>;
}

export function apiError(
  status: number,
  message: string,
  options: { type?: string; code?: string | null; param?: string | null; headers?: Record<string, string> } = {},
): ApiError {
  const type = options.type ?? (status >= 500 ? 'server_error' : 'invalid_request_error');
  const error: ApiError = {
    status,
    body: { error: { message, type, param: options.param ?? null, code: options.code ?? null } },
  };
  return options.headers ? { ...error, headers: options.headers } : error;
}
