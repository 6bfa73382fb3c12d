// The worker's cache of live sessions: each activity catches its session up with the store (reading
// only new events), validates drafts against it, and appends through the store's optimistic check.
// Bounded (least recently used beyond `maxSessions`, and idle past `idleMs`): a dropped entry is re-read.
import { DhError, ErrorCode, Session, type EventDraft, type SessionEvent } from '../core/index.js';
import { nativeEventDigest } from '../stores/native-sha256.js';
import type { SessionStore } from '../stores/session-store.js';
import type { Receipt } from '../shared/activity-contracts.js';

/** A worker held ~1.7 MiB per idle session (bench/RESULTS.md, "Idle sessions"), part of it here, never freed. */
export const DEFAULT_MAX_SESSIONS = 256;
export const DEFAULT_IDLE_MS = 10 * 60_000;
/** Rebases of one append over rows another writer slipped in (each needs a new row to have landed). */
const MAX_REBASES = 16;

/**
 * Rows that may land between a step's own rows: an accepted message logged while the step runs (the
 * workflow's concurrent appendInbox), or a session's new overrides (the `configure` update). Neither is
 * model-visible until a later step claims the message or composes its header, so a step's drafts mean the
 * same before or after them, and they mean the same wherever they land.
 */
function ridesAlong(event: { readonly type: string }): boolean {
  return event.type === 'inbox/enqueue' || event.type === 'inbox/downgrade' || event.type === 'agent/overrides';
}

/** The message id of a ride-along message row (overrides carry none). */
function messageIdOf(event: { readonly type: string; readonly messageId?: string }): string | undefined {
  return ridesAlong(event) ? event.messageId : undefined;
}

/** An event back to the draft it was made from (its seq and key are the log's to give). */
function toDraft(event: SessionEvent): EventDraft {
  const { seq: _seq, key: _key, ...draft } = event;
  return draft;
}

export interface SessionCacheLimits {
  /** Sessions kept; loading one more drops the least recently used. */
  readonly maxSessions?: number;
  /** A session untouched (no load, no append) this long is dropped at the next load. */
  readonly idleMs?: number;
}

export interface SessionCacheOptions extends SessionCacheLimits {
  /** A monotonic clock in milliseconds (tests inject one). */
  readonly now?: () => number;
}

interface Entry {
  readonly session: Session;
  readonly touchedAt: number;
}

/**
 * Eviction only drops the map entry: an activity holding the Session keeps working on it (its appends
 * still go through the store's optimistic check), and the next load re-reads the session in full.
 */
export class SessionCache {
  /** In touch order, least recent first: both evictions look only at the front. */
  readonly #sessions = new Map<string, Entry>();
  /** Sessions holding staged events (applied in memory, not yet in the store): the seq the first one took. */
  readonly #staged = new WeakMap<Session, number>();
  /** The store's chain digest of a session's last stored row, as last read or appended (null: unchained). */
  readonly #heads = new WeakMap<Session, { readonly seq: number; readonly chain: string | null }>();
  /** Per session, the tail of its loads and appends: one at a time in this process (two activities may run). */
  readonly #locks = new Map<string, Promise<unknown>>();
  readonly #maxSessions: number;
  readonly #idleMs: number;
  readonly #now: () => number;

  constructor(
    readonly store: SessionStore,
    options: SessionCacheOptions = {},
  ) {
    this.#maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
    this.#idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
    this.#now = options.now ?? (() => performance.now());
    if (!Number.isInteger(this.#maxSessions) || this.#maxSessions < 1)
      throw new RangeError(`SessionCache: maxSessions must be a positive integer, got ${this.#maxSessions}`);
    if (!(this.#idleMs > 0)) throw new RangeError(`SessionCache: idleMs must be positive, got ${this.#idleMs}`);
  }

  /** Sessions cached now (idle ones dropped first). */
  get size(): number {
    this.#dropIdle();
    return this.#sessions.size;
  }

  /** Whether the next load of `sessionId` reads only new events rather than the whole log. */
  has(sessionId: string): boolean {
    this.#dropIdle();
    return this.#sessions.has(sessionId);
  }

  /** The session, caught up with everything the store holds (another worker may have appended). */
  load(sessionId: string): Promise<Session> {
    return this.#locked(sessionId, () => this.#load(sessionId));
  }

  async #load(sessionId: string): Promise<Session> {
    this.#dropIdle();
    let session = this.#sessions.get(sessionId)?.session;
    // A copy ahead of the store (staged events an activity never appended) is not the truth: re-read.
    if (session && this.#staged.has(session)) session = undefined;
    if (!session) {
      let head: { seq: number; chain: string | null } | undefined;
      const events = await this.store.read(sessionId, 0, undefined, {
        onChain: (seq, chain) => (head = { seq, chain }),
      });
      session = new Session(sessionId, events);
      if (head !== undefined) this.#heads.set(session, head);
      this.#sessions.delete(sessionId);
      this.#sessions.set(sessionId, { session, touchedAt: this.#now() });
      for (const oldest of this.#sessions.keys()) {
        if (this.#sessions.size <= this.#maxSessions) break;
        this.#sessions.delete(oldest);
      }
      return session;
    }
    this.#touch(session);
    let head: { seq: number; chain: string | null } | undefined;
    const newer = await this.store.read(sessionId, session.head, undefined, {
      onChain: (seq, chain) => (head = { seq, chain }),
    });
    if (newer.length > 0) {
      try {
        session.appendEvents(newer);
      } catch (error) {
        this.#sessions.delete(sessionId);
        throw error;
      }
      if (head !== undefined) this.#heads.set(session, head);
    }
    return session;
  }

  /**
   * Validates `drafts` against the session and applies them in memory only: the next `append` on this
   * session writes them to the store together with its own drafts, in one store append (one commit).
   * Until then the cached copy is ahead of the store, so a `load` in between re-reads the store instead.
   */
  stage(session: Session, drafts: readonly EventDraft[]): Session {
    if (drafts.length === 0) return session;
    const start = this.#staged.get(session) ?? session.head;
    try {
      session.append(...drafts);
    } catch (error) {
      this.#sessions.delete(session.sessionId);
      throw error;
    }
    this.#staged.set(session, start);
    return session;
  }

  /**
   * Validates `drafts` against the session (structure, schema), appends them — after any staged events —
   * at its head, and returns the session as stored afterwards. On a store refusal the cached copy is
   * dropped (the next load re-reads the truth); on a lost race (a slot already filled by another attempt)
   * the winner's events are what the returned session holds. With no drafts it writes what is staged.
   *
   * Two writers may share a session's log: a step's activity and the workflow's appendInbox logging the
   * messages that arrive while the step runs. When the store refuses the append because rows landed in
   * between (SEQ_CONFLICT, or a message id another writer logged first) and either those rows or all of ours
   * only ride along (inbox/enqueue, inbox/downgrade), the append is rebased: validated again after them and
   * retried, dropping ride-along drafts the other writer already logged. Any other refusal fails as before.
   */
  append(session: Session, drafts: readonly EventDraft[]): Promise<Session> {
    return this.#locked(session.sessionId, () => this.#append(session, drafts, 0));
  }

  async #append(session: Session, drafts: readonly EventDraft[], rebases: number): Promise<Session> {
    const staged = this.#staged.get(session);
    if (drafts.length === 0 && staged === undefined) return session;
    const start = staged ?? session.head;
    this.#staged.delete(session);
    let events: readonly SessionEvent[];
    try {
      session.append(...drafts);
      events = session.events.slice(start);
    } catch (error) {
      this.#sessions.delete(session.sessionId);
      throw error;
    }
    try {
      const result = await this.store.append(session.sessionId, start, events);
      const lostRace = result.receipts.some(
        (r, i) => r.status === 'existing' && r.digest !== nativeEventDigest(events[i] as SessionEvent),
      );
      if (!lostRace) {
        const last = result.receipts.at(-1);
        if (last !== undefined) this.#heads.set(session, { seq: last.seq, chain: last.chain });
        this.#touch(session);
        return session;
      }
    } catch (error) {
      this.#sessions.delete(session.sessionId);
      const rebased = await this.#rebase(session.sessionId, start, events, error, rebases);
      if (rebased === null) throw error;
      return rebased;
    }
    this.#sessions.delete(session.sessionId);
    return this.#load(session.sessionId);
  }

  /** The append of `events` (meant for seq `start`) again on the stored log, when what came between allows. */
  async #rebase(
    sessionId: string,
    start: number,
    events: readonly SessionEvent[],
    error: unknown,
    rebases: number,
  ): Promise<Session | null> {
    const raced =
      error instanceof DhError && (error.code === ErrorCode.SeqConflict || error.code === ErrorCode.DuplicateMessageId);
    if (!raced || rebases >= MAX_REBASES) return null;
    const fresh = await this.#load(sessionId);
    const between = fresh.events.slice(start);
    if (between.length === 0) return null;
    if (!between.every(ridesAlong) && !events.every(ridesAlong)) return null;
    // What the other writer logged of ours (a message both were handed) is not logged twice.
    const logged = new Set(between.map(messageIdOf).filter((id): id is string => id !== undefined));
    const drafts = events.filter((e) => !logged.has(messageIdOf(e) ?? '')).map(toDraft);
    return this.#append(fresh, drafts, rebases + 1);
  }

  /** Runs `run` after every load and append of `sessionId` started before it in this process. */
  #locked<T>(sessionId: string, run: () => Promise<T>): Promise<T> {
    const previous = this.#locks.get(sessionId) ?? Promise.resolve();
    const next = previous.then(run, run);
    const tail = next.catch(() => undefined);
    this.#locks.set(sessionId, tail);
    void tail.then(() => {
      if (this.#locks.get(sessionId) === tail) this.#locks.delete(sessionId);
    });
    return next;
  }

  forget(sessionId: string): void {
    this.#sessions.delete(sessionId);
  }

  /**
   * Receipts of the session's events in [fromSeq, head): what the workflow history records. The last one
   * carries the store's chain digest of the session's last row when this cache knows it.
   */
  receiptsSince(session: Session, fromSeq: number): Receipt[] {
    const receipts = session.events
      .slice(fromSeq)
      .map((e): Receipt => ({ seq: e.seq, type: e.type, digest: nativeEventDigest(e) }));
    const last = receipts.at(-1);
    const head = this.#heads.get(session);
    if (last !== undefined && head !== undefined && head.seq === last.seq && head.chain !== null) {
      receipts[receipts.length - 1] = { ...last, chain: head.chain };
    }
    return receipts;
  }

  /**
   * Marks `session` recently used, if it is still the cached copy. Never re-inserts: a copy that was
   * evicted or forgotten (a damaged log, see createSessionActivities) must be re-read, not revived.
   */
  #touch(session: Session): void {
    if (this.#sessions.get(session.sessionId)?.session !== session) return;
    this.#sessions.delete(session.sessionId);
    this.#sessions.set(session.sessionId, { session, touchedAt: this.#now() });
  }

  #dropIdle(): void {
    const cutoff = this.#now() - this.#idleMs;
    for (const [sessionId, entry] of this.#sessions) {
      if (entry.touchedAt > cutoff) break;
      this.#sessions.delete(sessionId);
    }
  }
}
