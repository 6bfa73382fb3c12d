// One count of model-call slots for the two model queues a worker polls (its host's and the shared one),
// so DH_MODEL_CONCURRENCY caps the worker's model calls in all, wherever they came from.
import type { ActivitySlotInfo, CustomSlotSupplier, SlotPermit } from '@temporalio/worker';

/** A counting semaphore the SDK asks for a slot before each poll; waiters are served in order. */
export class ModelCallSlots implements CustomSlotSupplier<ActivitySlotInfo> {
  readonly type = 'custom';
  #free: number;
  readonly #waiting: Array<(permit: SlotPermit) => void> = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1)
      throw new RangeError(`model-call slots must be a positive integer, got ${size}`);
    this.#free = size;
  }

  get free(): number {
    return this.#free;
  }

  reserveSlot(_context: unknown, abortSignal: AbortSignal): Promise<SlotPermit> {
    const permit = this.tryReserveSlot();
    if (permit) return Promise.resolve(permit);
    return new Promise((resolve, reject) => {
      const grant = (granted: SlotPermit): void => {
        abortSignal.removeEventListener('abort', abort);
        resolve(granted);
      };
      // The SDK gives up on a reservation it no longer needs (a poller stopping): it expects the signal's
      // own reason back, whatever it is (anything else is logged as the supplier's error at every shutdown).
      const abort = (): void => {
        const at = this.#waiting.indexOf(grant);
        if (at >= 0) this.#waiting.splice(at, 1);
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the SDK compares by identity
        reject(abortSignal.reason);
      };
      if (abortSignal.aborted) return abort();
      abortSignal.addEventListener('abort', abort, { once: true });
      this.#waiting.push(grant);
    });
  }

  tryReserveSlot(): SlotPermit | null {
    if (this.#free === 0) return null;
    this.#free -= 1;
    return {};
  }

  markSlotUsed(): void {}

  releaseSlot(): void {
    const next = this.#waiting.shift();
    if (next) next({});
    else this.#free += 1;
  }
}
