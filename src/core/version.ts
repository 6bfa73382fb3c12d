// The session log's format version. Policy (docs/log-format.md): new event types are additive and do
// not bump it; a changed shape of an existing event bumps it, and the old shape keeps a reader.
export const SESSION_FORMAT_VERSION = 1;
