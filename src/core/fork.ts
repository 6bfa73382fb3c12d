// Fork (pure): a new session whose log starts with a copy of a parent's prefix. The copied events
// keep their seqs; the new `session/start` records the parent and the seed length.
import { toEvent, type SessionEvent } from './events.js';
import { Session } from './session.js';
import { ForkError } from './errors.js';
import { SESSION_FORMAT_VERSION } from './version.js';

/**
 * The events of a fork of `parent` at `atSeq` (the parent's events `[0, atSeq)` become the seed),
 * followed by a `session/seed-end`. The boundary must not fall inside an open turn or compaction.
 */
export function forkEvents(parent: Session, options: { sessionId: string; atSeq: number; at: number }): SessionEvent[] {
  const { sessionId, atSeq, at } = options;
  if (!Number.isInteger(atSeq) || atSeq < 1 || atSeq > parent.head) {
    throw new ForkError(parent.sessionId, atSeq, `the boundary must be between 1 and ${parent.head}`);
  }
  if (sessionId === parent.sessionId) throw new ForkError(parent.sessionId, atSeq, 'a fork needs a new session id');
  const prefix = new Session(parent.sessionId, parent.events.slice(0, atSeq));
  if (prefix.state.openTurn !== null) {
    throw new ForkError(parent.sessionId, atSeq, `turn ${prefix.state.openTurn} is open at that point`);
  }
  if (prefix.state.openCompaction !== null)
    throw new ForkError(parent.sessionId, atSeq, 'a compaction is open at that point');
  const events: SessionEvent[] = [
    toEvent(
      {
        type: 'session/start',
        at,
        sessionId,
        formatVersion: SESSION_FORMAT_VERSION,
        // A fork runs its parent's agent (a version-1 parent: the default one, named nowhere).
        ...(parent.state.agent ? { agent: parent.state.agent } : {}),
        parent: { sessionId: parent.sessionId, seedLength: atSeq },
      },
      0,
    ),
    ...parent.events.slice(1, atSeq),
    toEvent({ type: 'session/seed-end', at }, atSeq),
  ];
  new Session(sessionId, events); // validates the fork as a log of its own
  return events;
}
