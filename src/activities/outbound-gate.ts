// The outbound gate as the activity side runs it: before every send, read the whole log from the store
// again and rebuild the request from what was read; never from the live session's cache. What makes it
// cheap on a long log is the gate's own memory of rows it verified before (never the cache's).
import {
  buildSessionRequest,
  Session,
  verifyRequestAgainst,
  type BuiltRequest,
  type SessionEvent,
} from '../core/index.js';
import type { SessionStore } from '../stores/session-store.js';
import { VerifiedRows } from '../stores/verified-rows.js';

interface GateEntry {
  readonly verified: VerifiedRows;
  /** Admitted from exactly the events of the last read: its `events` are what the next read is compared with. */
  readonly session: Session;
}

/** Sessions whose verified rows the gate keeps; the least recently verified beyond this is dropped. */
export const GATE_MEMORY_SESSIONS = 256;

export class OutboundGate {
  readonly #entries = new Map<string, GateEntry>();
  /** How each verification derived its request: a session the gate had not seen, one advanced by new rows, or one rebuilt because an earlier row changed. */
  readonly counts = { cold: 0, advanced: 0, rebuilt: 0 };

  constructor(
    readonly store: SessionStore,
    readonly maxSessions = GATE_MEMORY_SESSIONS,
  ) {}

  /**
   * Returns the request if the stored log derives exactly it; throws InvariantError otherwise. Every row
   * is fetched and compared with what the gate verified before; a new or changed row is validated in full
   * (JSON, schema, digest). When every earlier row is unchanged, the gate's session admits only the new
   * events; when any changed, it is rebuilt from the read. Call it as the last step before the wire
   * body is built, so nothing can change in between.
   */
  async verify(request: BuiltRequest): Promise<BuiltRequest> {
    const { sessionId } = request;
    const previous = this.#entries.get(sessionId);
    const verified = previous?.verified ?? new VerifiedRows();
    verified.beginRead();
    const events = await this.store.read(sessionId, 0, undefined, { verified });
    // The rows this read validated in full (JSON, schema, columns, digest), frozen since: the session
    // admits them without parsing them a second time, still checking their place and the log's structure.
    // A row the memo matched is not among them; it is either the session's own event already (advance)
    // or parsed again (rebuild).
    const admit = { validated: verified.validatedInRead };
    let entry: GateEntry;
    try {
      const unchanged = previous !== undefined && extends_(events, previous.session.events);
      if (unchanged) previous.session.appendEvents(events.slice(previous.session.head), admit);
      entry = unchanged ? previous : { verified, session: new Session(sessionId, events, admit) };
      this.counts[unchanged ? 'advanced' : previous ? 'rebuilt' : 'cold']++;
    } catch (error) {
      this.#entries.delete(sessionId);
      throw error;
    }
    // From here on the memo hands back the session's own frozen copies, and the raw events of this read
    // can go: one copy of the log in memory instead of two.
    verified.adopt(entry.session.events);
    // Most recently used last: Map iteration order is insertion order.
    this.#entries.delete(sessionId);
    this.#entries.set(sessionId, entry);
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.maxSessions) break;
      this.#entries.delete(oldest);
    }
    return verifyRequestAgainst(request, buildSessionRequest(entry.session));
  }
}

/** True when `before` is a prefix of `now` object for object: no earlier row changed since the last read. */
function extends_(now: readonly SessionEvent[], before: readonly SessionEvent[]): boolean {
  if (now.length < before.length) return false;
  for (let i = 0; i < before.length; i++) if (now[i] !== before[i]) return false;
  return true;
}
