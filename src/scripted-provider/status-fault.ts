// The HTTP-status faults of a script (rate limit, server error, any status) as the error answers real
// providers give, with their OpenAI-shaped error type and code.
import { apiError, type ApiError } from './api-error.js';
import type { Fault } from './script.js';

const STATUS_CODES: Readonly<Record<number, { type: string; code: string }>> = {
  400: { type: 'invalid_request_error', code: 'invalid_request_error' },
  401: { type: 'authentication_error', code: 'invalid_api_key' },
  402: { type: 'invalid_request_error', code: 'insufficient_balance' },
  403: { type: 'permission_error', code: 'permission_denied' },
  404: { type: 'invalid_request_error', code: 'not_found' },
  413: { type: 'invalid_request_error', code: 'request_too_large' },
  422: { type: 'invalid_request_error', code: 'invalid_parameters' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
};

/** The error answer of an HTTP-status fault, or undefined for faults that play out on a 200. */
export function statusFault(fault: Fault | undefined): ApiError | undefined {
  switch (fault?.kind) {
    case 'rate-limit':
      return apiError(429, fault.message ?? 'Rate limit reached for requests (scripted fault). Please retry later.', {
        type: 'requests',
        code: 'rate_limit_exceeded',
        headers: {
          'retry-after': String(Math.ceil(fault.retryAfterSeconds)),
          'retry-after-ms': String(Math.round(fault.retryAfterSeconds * 1000)),
        },
      });
    case 'server-error':
      return apiError(
        fault.status,
        fault.message ?? 'The server had an error while processing your request (scripted fault).',
        {
          type: 'server_error',
          code: 'server_error',
        },
      );
    case 'status': {
      const known = STATUS_CODES[fault.status];
      return apiError(fault.status, fault.message ?? `Scripted ${fault.status} fault.`, {
        type: fault.type ?? known?.type ?? (fault.status >= 500 ? 'server_error' : 'invalid_request_error'),
        code: fault.code ?? known?.code ?? (fault.status >= 500 ? 'server_error' : 'invalid_request_error'),
      });
    }
    default:
      return undefined;
  }
}
