// The session log's format version. See docs/log-format.md for the evolution policy: new event types
// are additive (no bump); a changed shape of an existing event bumps this and keeps a reader for the old one.
export const SESSION_FORMAT_VERSION = 1;

/** Every format version this build can read. Older ones are upgraded on load by `upgradeEvent`. */
export const READABLE_FORMAT_VERSIONS: readonly number[] = [1];
