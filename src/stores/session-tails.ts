// What one store connection last saw at the end of each session's log: the head and the chain of the row
// before it. An append at exactly that head can then be planned without reading the log first, and is
// written only where the stored row before it still carries that chain (the database checks, in the insert).
import type { AppendResult } from './session-store.js';

export interface SessionTail {
  /** The next free seq as last seen. */
  readonly head: number;
  /** The chain digest of row `head - 1`. */
  readonly lastChain: string;
}

/** Sessions whose tail is remembered; the least recently used beyond this is forgotten. */
export const REMEMBERED_TAILS = 1024;

export class SessionTails {
  readonly #tails = new Map<string, SessionTail>();

  constructor(readonly capacity = REMEMBERED_TAILS) {}

  /** The tail, if remembered and an append at `expectedSeq` would continue it. */
  at(sessionId: string, expectedSeq: number): SessionTail | undefined {
    const tail = this.#tails.get(sessionId);
    return tail !== undefined && tail.head === expectedSeq && expectedSeq > 0 ? tail : undefined;
  }

  /** After an append that committed: its last receipt is the new tail (a row without a chain forgets it). */
  appended(sessionId: string, result: AppendResult): void {
    const last = result.receipts.at(-1);
    if (last === undefined) return;
    this.#remember(sessionId, last.seq + 1, last.chain);
  }

  /** After a read that reached the end of the log: its last row is the tail. */
  read(sessionId: string, lastSeq: number, lastChain: string | null): void {
    this.#remember(sessionId, lastSeq + 1, lastChain);
  }

  forget(sessionId: string): void {
    this.#tails.delete(sessionId);
  }

  #remember(sessionId: string, head: number, lastChain: string | null): void {
    this.#tails.delete(sessionId);
    if (lastChain === null) return;
    this.#tails.set(sessionId, { head, lastChain });
    for (const oldest of this.#tails.keys()) {
      if (this.#tails.size <= this.capacity) break;
      this.#tails.delete(oldest);
    }
  }
}
