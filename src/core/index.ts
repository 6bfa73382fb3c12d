// The pure core: the session log's vocabulary, validation, derivation, request building and gate.
// Safe to import from the Temporal workflow sandbox (no Node APIs, no clock, no randomness).
export * from './version.js';
export * from './errors.js';
export * from './json.js';
export * from './well-formed-text.js';
export * from './canonical-json.js';
export * from './deep-freeze.js';
export * from './messages.js';
export * from './request-header.js';
export * from './policy-rule.js';
export * from './approval-short-id.js';
export * from './session-id.js';
export * from './events.js';
export * from './fold-request-header.js';
export * from './event-digest.js';
export * from './surface.js';
export * from './log-state.js';
export * from './session.js';
export * from './build-request.js';
export * from './verify-request.js';
export * from './repair.js';
export * from './fork.js';
export * from './compaction.js';
export * from './usage-sum.js';
export * from './delegation.js';
export * from './message-fates.js';
export * from './shard-key.js';
