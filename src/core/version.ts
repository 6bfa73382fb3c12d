// The session log's format version. Policy (docs/log-format.md): new event types are additive and do
// not bump it; a changed shape of an existing event bumps it, and the old shape keeps a reader.
export const SESSION_FORMAT_VERSION = 2;

/**
 * Versions a reader loads. 2 added the agent (`agent` in `session/start` and in each header, the
 * `agent/overrides` event); a version-1 log ran the worker's configuration, read as the default agent.
 */
export const READABLE_FORMAT_VERSIONS = [1, 2] as const;
