// The package's `durable-harness/worker` entry: the worker that runs agents (startWorker, runWorker, its
// configuration and default plugins), and the Node side that needs the native database drivers — the session
// store and the live side channel a service reads. A service that only steers sessions uses the client entry.
export { runWorker, startWorker, type DhWorker, type StartWorkerOptions } from './start-worker.js';
export { defaultAgent, defaultPlugins, workerPlugins } from './default-plugins.js';
export { readWorkerConfig, type WorkerConfig } from '../config/worker-config.js';
export { createLogger, type Logger } from '../observability/logger.js';
export { openSessionStore, type OpenSessionStoreOptions } from '../stores/open-session-store.js';
export type { SessionStore, SessionSummary } from '../stores/session-store.js';
export { LOG_KEY_ENV, LogKey, logKeyFromEnv, parseLogKey } from '../stores/log-key.js';
export { verifyChain, type ChainLink, type ChainVerification, type StoredChain } from '../stores/log-chain.js';
export { checkHistoryMirror, type MirrorReport } from '../client/history-mirror.js';
export type { DeltaChannel, LiveDelta, LiveDeltaDraft, LiveDeltaKind } from '../streaming/delta-channel.js';
export { openDeltaChannel } from '../streaming/open-delta-channel.js';
export { SessionFollower } from '../streaming/session-follower.js';
