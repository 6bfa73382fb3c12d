// The browser origins `dh codec-server` allows by default: the local stack's Web UI. A module of its own
// so the command's definition (help text) and its action share them without importing each other.

/** The local stack's Web UI (gRPC port 7233 + 1000), under both loopback names. */
export const DEFAULT_UI_ORIGINS = ['http://localhost:8233', 'http://127.0.0.1:8233'] as const;
