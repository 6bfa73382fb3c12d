// Loading a run of stored rows as events: the run must be contiguous (a hole is a damaged log), and a
// reader's VerifiedRows memo spares re-validating rows it has already seen unchanged.
import { InvalidEventError } from '../core/errors.js';
import type { SessionEvent } from '../core/events.js';
import { rowToEvent, type EventRow } from './event-row.js';
import type { VerifiedRows } from './verified-rows.js';

/**
 * Loads rows that must be the contiguous run `fromSeq, fromSeq + 1, ...`: a hole is a damaged log. With a
 * `verified` memo, a row it matches yields its remembered event; any other row is validated in full and
 * remembered, its event deep-frozen and counted among the memo's `validatedInRead`.
 */
export function rowsToEvents(
  sessionId: string,
  fromSeq: number,
  rows: readonly EventRow[],
  verified?: VerifiedRows,
): SessionEvent[] {
  return rows.map((row, i) => {
    if (row.seq !== fromSeq + i) {
      // Damage, not a race: INVALID_EVENT, which no retry can clear (unlike a retryable SEQ_GAP).
      throw new InvalidEventError(
        sessionId,
        fromSeq + i,
        `missing from the stored log (next stored seq is ${row.seq})`,
      );
    }
    if (!verified) return rowToEvent(sessionId, row);
    return verified.lookup(row) ?? verified.remember(row, rowToEvent(sessionId, row));
  });
}
