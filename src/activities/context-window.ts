// The context window a session runs against, as its log records it: each header the worker composes
// carries the window of its model (and, where the worker has a default, the output limit that window gives),
// and pressure reads the header in force before asking the profile.
import type { RequestHeader } from '../core/index.js';
import { modelEntry } from '../config/worker-profile.js';
import type { SessionRuntime } from './session-runtime.js';

/**
 * `header` with the window its model has on this worker. A worker that only assumes the generic window
 * keeps the one `current` records for the same provider and model (configured or discovered earlier).
 */
export function withContextWindow(
  runtime: SessionRuntime,
  header: RequestHeader,
  current: RequestHeader | undefined,
): RequestHeader {
  const { provider, model } = header.config;
  const recorded =
    runtime.contextWindowAssumed === true && current?.config.provider === provider && current.config.model === model
      ? current.contextWindow
      : undefined;
  const tokens = recorded ?? modelEntry(runtime.profile, model)?.contextWindow;
  if (tokens === undefined) return header;
  return { ...header, contextWindow: tokens };
}

/**
 * `header` with the worker's default output limit for its recorded window, when its config sets none: the
 * limit of the model the header names, whichever model the request waterfall ended with.
 */
export function withDefaultMaxTokens(runtime: SessionRuntime, header: RequestHeader): RequestHeader {
  const window = header.contextWindow;
  if (runtime.defaultMaxTokens === undefined || header.config.maxTokens !== undefined || window === undefined) {
    return header;
  }
  return { ...header, config: { ...header.config, maxTokens: runtime.defaultMaxTokens(window) } };
}

/** The window of the header in force: the one it records, else (headers written before) the profile's. */
export function headerContextWindow(runtime: SessionRuntime, header: RequestHeader): number | undefined {
  return header.contextWindow ?? modelEntry(runtime.profile, header.config.model)?.contextWindow;
}
