// What one reader has already verified of a session's stored rows: each row's exact columns and the event
// it validated to. A later read that finds a row unchanged, column for column and byte for byte, reuses
// that event instead of parsing, schema-checking and digesting it again; any difference re-validates.
import type { SessionEvent } from '../core/events.js';
import { deepFreeze } from '../core/deep-freeze.js';
import type { EventRow } from './event-row.js';

export class VerifiedRows {
  readonly #rows: EventRow[] = [];
  /** Events validated since the last `adopt` (they win over the adopted ones). */
  #own: SessionEvent[] = [];
  #adopted: readonly SessionEvent[] = [];
  /** Events validated in full since the last `beginRead` (see `validatedInRead`). */
  #validated = new Set<SessionEvent>();

  /** The event this exact row validated to before, or undefined when the row is new or differs. */
  lookup(row: EventRow): SessionEvent | undefined {
    const known = this.#rows[row.seq];
    if (
      known === undefined ||
      known.body !== row.body ||
      known.digest !== row.digest ||
      known.type !== row.type ||
      known.key !== row.key ||
      known.messageId !== row.messageId ||
      known.at !== row.at
    ) {
      return undefined;
    }
    return this.#own[row.seq] ?? this.#adopted[row.seq];
  }

  /**
   * Records a row that has just passed full validation (JSON, schema at its seq, columns, digest), and
   * returns its event, deep-frozen: what was validated can no longer change.
   */
  remember(row: EventRow, event: SessionEvent): SessionEvent {
    // Keep only plain copies of the columns: a driver's row object may carry more than we compare.
    this.#rows[row.seq] = {
      seq: row.seq,
      type: row.type,
      key: row.key,
      messageId: row.messageId,
      digest: row.digest,
      at: row.at,
      body: row.body,
    };
    const frozen = deepFreeze(event);
    this.#own[row.seq] = frozen;
    this.#validated.add(frozen);
    return frozen;
  }

  /** Starts a read: from now on `validatedInRead` holds only events the store validates from here on. */
  beginRead(): void {
    this.#validated = new Set();
  }

  /**
   * The events the store's reader validated in full, row by row, since `beginRead` (each deep-frozen at
   * once, so still exactly what passed). A row the memo matched instead is not among them, ever: it was
   * validated by an earlier read. A Session may admit these without parsing them again (see
   * `AdmitOptions.validated`); everything else it parses.
   */
  get validatedInRead(): ReadonlySet<SessionEvent> {
    return this.#validated;
  }

  /**
   * From now on hands back `events[seq]` for every remembered row: a reader that keeps its own equal
   * copies of exactly the events of its last read (e.g. a Session admitted from them) need not keep both.
   * `events` may grow afterwards (the reader's copies of later rows); it must never change what it holds.
   * Ends the read: `validatedInRead` is empty until the next one.
   */
  adopt(events: readonly SessionEvent[]): void {
    this.#adopted = events;
    this.#own = [];
    this.#validated = new Set();
  }

  /** Rows remembered (the highest remembered seq + 1). */
  get size(): number {
    return this.#rows.length;
  }
}
