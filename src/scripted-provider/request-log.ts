// The scripted provider's record of what it received and what it answered: each request byte for byte as it
// arrived, completed with its answer's status (and which fault, which error code) once that is known; the
// JSONL record file gets one line per request then, so a file alone tells a 429 from a 200.
import { appendFileSync } from 'node:fs';
import type { Fault } from './script.js';

/** How a request was answered. */
export interface RecordedAnswer {
  /** The HTTP status, or null when the connection ended before any (a non-streamed `disconnect`, a client gone). */
  readonly status: number | null;
  /** The script's fault the answer played, by kind (absent for a reply without one, and for the quota's 429). */
  readonly fault?: Fault['kind'];
  /** An error answer's code (`rate_limit_exceeded`, `script_exhausted`, `model_not_found`, ...). */
  readonly error?: string;
}

export interface RecordedRequest {
  readonly index: number;
  readonly path: string;
  readonly method: string;
  /** Lower-case header names; credentials (`authorization`, `x-api-key`, ...) are masked. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body bytes as received, decoded as UTF-8 (exact for every valid UTF-8 body). */
  readonly body: string;
  /** Wall-clock milliseconds when the body was complete. */
  readonly receivedAt: number;
  /** Absent until the answer starts (its status is sent) or the connection ends without one. */
  readonly answer?: RecordedAnswer;
}

export class RequestLog {
  readonly #records: RecordedRequest[] = [];
  readonly #file: string | undefined;

  /** `file`: the JSONL file that gets each answered request; it must be writable now, not at the first request. */
  constructor(file: string | undefined) {
    this.#file = file;
    if (file !== undefined) appendFileSync(file, '');
  }

  get size(): number {
    return this.#records.length;
  }

  /** Records a request as it arrived; its index is its place in arrival order. */
  received(request: Omit<RecordedRequest, 'index' | 'answer'>): number {
    const index = this.#records.length;
    this.#records.push(Object.freeze({ index, ...request }));
    return index;
  }

  /**
   * Completes a request with its answer, once: written before the answer's first byte, so a client that has
   * its answer finds it recorded. The file's lines come in the order answers started; `index` is arrival order.
   */
  answered(index: number, answer: RecordedAnswer): void {
    const record = this.#records[index];
    if (record === undefined || record.answer !== undefined) return;
    const done: RecordedRequest = Object.freeze({ ...record, answer: Object.freeze(answer) });
    this.#records[index] = done;
    if (this.#file !== undefined) appendFileSync(this.#file, `${JSON.stringify(done)}\n`);
  }

  /** A snapshot: later requests and answers do not change it. */
  all(): readonly RecordedRequest[] {
    return this.#records.slice();
  }
}
