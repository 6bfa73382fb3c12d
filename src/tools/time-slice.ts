// Lets a tool's long synchronous loop (matching every line or path of a workspace) give the event loop a turn
// every few milliseconds, so the worker keeps heartbeating, answering queries and hearing signals meanwhile.
import { setImmediate as nextTurn } from 'node:timers/promises';

/** How long a loop may hold the event loop before it lets everything else that waits run. */
const SLICE_MS = 10;

export class TimeSlice {
  private started = performance.now();

  /** Whether the loop has held the event loop for a slice and should `await next()` now. */
  overdue(): boolean {
    return performance.now() - this.started >= SLICE_MS;
  }

  /** Yields to the event loop (after pending I/O), then starts a new slice. */
  async next(): Promise<void> {
    await nextTurn();
    this.started = performance.now();
  }
}
