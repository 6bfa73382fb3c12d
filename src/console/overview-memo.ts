// What each log added up to at a head, so a polled session list reads again only the logs that grew (a
// browser asks every 2 s; a long idle log is read once): its overview and the text its search looks in.
import { sessionOverview, type SessionOverview } from '../operations/session-overview.js';
import type { SessionStore } from '../stores/session-store.js';
import { ErrorCode, DhError } from '../core/index.js';
import { sessionText } from './session-text.js';

const MEMO_SESSIONS = 2_000;

export interface KnownLog {
  readonly overview: SessionOverview;
  readonly text: string;
}

export class OverviewMemo {
  readonly #byId = new Map<string, { readonly head: number; readonly known: KnownLog }>();

  /** Null for a session the store does not have (visibility can list a workflow whose log is elsewhere). */
  async of(store: SessionStore, sessionId: string): Promise<KnownLog | null> {
    let head: number;
    try {
      head = await store.head(sessionId);
    } catch (error) {
      if (error instanceof DhError && error.code === ErrorCode.SessionNotFound) return null;
      throw error;
    }
    const memo = this.#byId.get(sessionId);
    if (memo?.head === head) return memo.known;
    const events = await store.read(sessionId, 0, head);
    const known = { overview: sessionOverview(sessionId, events), text: sessionText(events) };
    this.#byId.delete(sessionId);
    this.#byId.set(sessionId, { head, known });
    // Maps iterate in insertion order: past the bound, forget the longest-unchanged logs first.
    for (const id of this.#byId.keys()) {
      if (this.#byId.size <= MEMO_SESSIONS) break;
      this.#byId.delete(id);
    }
    return known;
  }
}
