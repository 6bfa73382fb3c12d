// The model-call slot count both model queues of a worker draw from: never more permits out than its size,
// waiters served in order as permits come back, and an aborted wait leaves the queue without taking one.
import { describe, expect, it } from 'vitest';
import { ModelCallSlots } from '../../src/worker/model-call-slots.js';

const context = {} as never;

describe('ModelCallSlots', () => {
  it('hands out at most its size, then serves waiters in order as slots are released', async () => {
    const slots = new ModelCallSlots(2);
    await slots.reserveSlot(context, new AbortController().signal);
    expect(slots.tryReserveSlot()).not.toBeNull();
    expect(slots.tryReserveSlot()).toBeNull();
    const served: string[] = [];
    const first = slots.reserveSlot(context, new AbortController().signal).then(() => served.push('first'));
    const second = slots.reserveSlot(context, new AbortController().signal).then(() => served.push('second'));
    slots.releaseSlot();
    await first;
    expect(served).toEqual(['first']);
    expect(slots.free).toBe(0);
    slots.releaseSlot();
    await second;
    expect(served).toEqual(['first', 'second']);
    slots.releaseSlot();
    slots.releaseSlot();
    expect(slots.free).toBe(2);
  });

  it("rejects an aborted wait with the signal's reason and gives its turn to the next waiter", async () => {
    const slots = new ModelCallSlots(1);
    expect(slots.tryReserveSlot()).not.toBeNull();
    const aborter = new AbortController();
    const aborted = slots.reserveSlot(context, aborter.signal);
    const next = slots.reserveSlot(context, new AbortController().signal);
    aborter.abort();
    await expect(aborted).rejects.toBe(aborter.signal.reason);
    slots.releaseSlot();
    await expect(next).resolves.toEqual({});
    expect(slots.free).toBe(0);
    const late = new AbortController();
    late.abort();
    await expect(slots.reserveSlot(context, late.signal)).rejects.toBe(late.signal.reason);
  });

  it('refuses a size that is not a positive integer', () => {
    expect(() => new ModelCallSlots(0)).toThrow(RangeError);
    expect(() => new ModelCallSlots(1.5)).toThrow(RangeError);
  });
});
