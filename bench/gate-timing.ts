// Times the outbound gate as a worker runs it in steady state: one gate per worker that has verified the
// session's earlier steps, so each step it re-reads every row but validates only the step's new ones.
import { OutboundGate } from '../src/activities/outbound-gate.js';
import type { SessionStore } from '../src/stores/session-store.js';
import { median } from './measure.js';
import { workloadDriver } from './log-workload.js';

/**
 * Median milliseconds of `gate.verify` over the last `steps` steps of a workload log of about `size`
 * events, each step's new events appended (untimed) just before its verification, as in a session.
 */
export async function warmGateMs(store: SessionStore, sessionId: string, size: number, steps = 9): Promise<number> {
  const driver = workloadDriver(size, sessionId);
  const records = driver.steps.slice(-(steps + 1));
  const events = driver.session.events;
  const gate = new OutboundGate(store);
  await store.create(sessionId, { createdAt: 0 });
  let stored = 0;
  const times: number[] = [];
  for (const [i, record] of records.entries()) {
    for (; stored < record.head; stored += Math.min(5_000, record.head - stored)) {
      await store.append(sessionId, stored, events.slice(stored, Math.min(stored + 5_000, record.head)));
    }
    const start = performance.now();
    await gate.verify(record.request);
    // The first verification is the cold one (a worker's first step for the session): not counted.
    if (i > 0) times.push(performance.now() - start);
  }
  return median(times);
}
