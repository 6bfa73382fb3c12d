// The worker's cache of live sessions: each activity catches its session up with the store (reading
// only new events), validates drafts against it, and appends through the store's optimistic check.
import { Session, type EventDraft, type SessionEvent } from '../core/index.js';
import { nativeEventDigest } from '../stores/native-sha256.js';
import type { SessionStore } from '../stores/session-store.js';
import type { Receipt } from '../shared/activity-contracts.js';

export class SessionCache {
  readonly #sessions = new Map<string, Session>();

  constructor(readonly store: SessionStore) {}

  /** The session, caught up with everything the store holds (another worker may have appended). */
  async load(sessionId: string): Promise<Session> {
    let session = this.#sessions.get(sessionId);
    if (!session) {
      session = new Session(sessionId, await this.store.read(sessionId));
      this.#sessions.set(sessionId, session);
      return session;
    }
    const newer = await this.store.read(sessionId, session.head);
    if (newer.length > 0) {
      try {
        session.appendEvents(newer);
      } catch (error) {
        this.#sessions.delete(sessionId);
        throw error;
      }
    }
    return session;
  }

  /**
   * Validates `drafts` against the session (structure, schema), appends them at its head, and returns
   * the session as stored afterwards. On a store refusal the cached copy is dropped (the next load
   * re-reads the truth); on a lost race (a slot already filled by another attempt) the winner's events
   * are what the returned session holds.
   */
  async append(session: Session, drafts: readonly EventDraft[]): Promise<Session> {
    if (drafts.length === 0) return session;
    const start = session.head;
    let events: readonly SessionEvent[];
    try {
      events = session.append(...drafts);
    } catch (error) {
      this.#sessions.delete(session.sessionId);
      throw error;
    }
    try {
      const result = await this.store.append(session.sessionId, start, events);
      const lostRace = result.receipts.some(
        (r, i) => r.status === 'existing' && r.digest !== nativeEventDigest(events[i] as SessionEvent),
      );
      if (!lostRace) return session;
    } catch (error) {
      this.#sessions.delete(session.sessionId);
      throw error;
    }
    this.#sessions.delete(session.sessionId);
    return this.load(session.sessionId);
  }

  forget(sessionId: string): void {
    this.#sessions.delete(sessionId);
  }
}

/** Receipts of the session's events in [fromSeq, head): what the workflow history records. */
export function receiptsSince(session: Session, fromSeq: number): Receipt[] {
  return session.events.slice(fromSeq).map((e) => ({ seq: e.seq, type: e.type, digest: nativeEventDigest(e) }));
}
