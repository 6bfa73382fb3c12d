// What one reader has already verified of a session's stored rows: each row's exact columns and the event
// it validated to. A later read that finds a row unchanged, column for column and byte for byte, reuses
// that event instead of parsing, schema-checking and digesting it again; any difference re-validates.
import type { SessionEvent } from '../core/events.js';
import type { EventRow } from './event-row.js';

export class VerifiedRows {
  readonly #rows: EventRow[] = [];
  /** Events validated since the last `adopt` (they win over the adopted ones). */
  #own: SessionEvent[] = [];
  #adopted: readonly SessionEvent[] = [];

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

  /** Records a row that has just passed full validation, and returns its event. */
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
    this.#own[row.seq] = event;
    return event;
  }

  /**
   * From now on hands back `events[seq]` for every remembered row: a reader that keeps its own equal
   * copies of exactly the events of its last read (e.g. a Session admitted from them) need not keep both.
   * `events` may grow afterwards (the reader's copies of later rows); it must never change what it holds.
   */
  adopt(events: readonly SessionEvent[]): void {
    this.#adopted = events;
    this.#own = [];
  }

  /** Rows remembered (the highest remembered seq + 1). */
  get size(): number {
    return this.#rows.length;
  }
}
