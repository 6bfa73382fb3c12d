// The client library for Node services (the package's "." export): a typed SessionClient, the
// history-mirror check, the session workflow's message definitions with their payload schemas and
// types, and the live side channel for following a session's streamed output.
// Everything the standalone client package exports (SessionClient, the message definitions, limits, core
// types), then what needs the stores, the history or the side channel.
export * from './client-package.js';
export { checkHistoryMirror, type MirrorReport } from './history-mirror.js';
export { openSessionStore, type OpenSessionStoreOptions } from '../stores/open-session-store.js';
export { LOG_KEY_ENV, LogKey, logKeyFromEnv, parseLogKey } from '../stores/log-key.js';
export { verifyChain, type ChainLink, type ChainVerification, type StoredChain } from '../stores/log-chain.js';
export type { SessionStore, SessionSummary } from '../stores/session-store.js';
export type { DeltaChannel, LiveDelta, LiveDeltaDraft, LiveDeltaKind } from '../streaming/delta-channel.js';
export { openDeltaChannel } from '../streaming/open-delta-channel.js';
export { SessionFollower } from '../streaming/session-follower.js';
