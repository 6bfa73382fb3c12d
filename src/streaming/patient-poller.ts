// Polls a session follower through store outages: a failed round changes nothing in the follower, so the
// next one carries on where it would have. The first failure of a spell is reported once, and the wait
// before the next try grows to a cap; a successful round resets both.
import type { SessionFollower, StreamFrame } from './session-follower.js';

export interface PatientPollerOptions {
  /** Called once at the start of a spell of failures, with the error's message. */
  readonly onStall?: (reason: string) => void;
  /** Called when a round succeeds after a spell of failures. */
  readonly onRecover?: () => void;
  /** The first wait after a failure (doubles each time), default 100 ms; at most `maxDelayMs` (2 s). */
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
}

export class PatientPoller {
  #failures = 0;

  constructor(
    readonly follower: SessionFollower,
    private readonly options: PatientPollerOptions = {},
  ) {}

  /** True while the last round failed. */
  get stalled(): boolean {
    return this.#failures > 0;
  }

  /** One round's frames; after a failed round, none (having waited the backoff). */
  async poll(): Promise<StreamFrame[]> {
    try {
      const frames = await this.follower.poll();
      if (this.#failures > 0) this.options.onRecover?.();
      this.#failures = 0;
      return frames;
    } catch (error) {
      this.#failures++;
      if (this.#failures === 1) this.options.onStall?.(error instanceof Error ? error.message : String(error));
      const base = this.options.baseDelayMs ?? 100;
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(this.options.maxDelayMs ?? 2_000, base * 2 ** (this.#failures - 1))),
      );
      return [];
    }
  }
}
