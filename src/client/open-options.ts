// How a new session starts (its agent, its overrides of that agent, its limits), and `open`'s two forms of it.
import type { AgentOverrides } from '../core/index.js';
import type { SessionLimits } from '../shared/session-limits.js';

/** How a new session starts. An existing session keeps its own. */
export interface OpenOptions {
  /**
   * One the workers serve (`dh agents ls`); default: their default agent. An unknown one fails the session's
   * start (UNKNOWN_AGENT, naming the agents served) and leaves no log.
   */
  readonly agent?: string;
  readonly overrides?: AgentOverrides;
  readonly limits?: Partial<SessionLimits>;
}

/** What a start carries into the workflow's input. */
export type StartOptions = OpenOptions;

/** `open`'s options, from either form (a bare limits object is the older one). */
export function openOptions(options: OpenOptions | Partial<SessionLimits> | undefined): StartOptions {
  if (options === undefined) return {};
  const keys = Object.keys(options);
  if (keys.length > 0 && keys.every((key) => key === 'agent' || key === 'overrides' || key === 'limits')) {
    return options as OpenOptions;
  }
  return { limits: options as Partial<SessionLimits> };
}
