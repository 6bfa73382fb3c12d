// Forks a session at a seq: the new log is the parent's first `atSeq` events (chained to the parent's
// chain where the seed ends), and its workflow is started. Shared by `dh fork` and the web console.
import type { SessionClient } from '../client/session-client.js';
import { forkEvents, Session } from '../core/index.js';
import type { SessionStore } from '../stores/session-store.js';
import { createSessionFromLog, forkAnchor } from './session-transfer.js';

export interface ForkOptions {
  readonly atSeq: number;
  /** The new session's id; default `<id>-fork-<random>`. */
  readonly as?: string;
}

/** Returns the new session's id. */
export async function forkSession(
  store: SessionStore,
  sessions: SessionClient,
  sessionId: string,
  options: ForkOptions,
): Promise<string> {
  const parent = new Session(sessionId, await store.read(sessionId));
  const forkId = options.as ?? `${sessionId.slice(0, 100)}-fork-${randomSuffix()}`;
  const events = forkEvents(parent, { sessionId: forkId, atSeq: options.atSeq, at: Date.now() });
  // The fork's first link binds the parent's chain where the seed ends.
  const chainAnchor = await forkAnchor(store, sessionId, options.atSeq);
  await createSessionFromLog(store, forkId, events, chainAnchor !== undefined ? { chainAnchor } : {});
  // The fork's first run opens its log (nothing to repair) and waits; its next step logs a `resume` header.
  await sessions.open(forkId);
  return forkId;
}

function randomSuffix(): string {
  return Math.random().toString(16).slice(2, 8).padEnd(6, '0');
}
