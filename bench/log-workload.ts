// A realistic session log of a given size for the benchmarks: turns of a followup, a step with one
// tool call and a closing step, repeated. Built through Session.append, so it is valid.
import type { SessionEvent } from '../src/core/index.js';
import { LogDriver, type LogCommand } from '../test/helpers/log-generator.js';

const CYCLE: readonly LogCommand[] = [
  { kind: 'send', origin: 'followup', text: 'Please look at the next file and summarize what changed in it.' },
  { kind: 'step', toolCalls: 1, text: 'Reading the file now.', changeHeader: false, skipLastTool: false },
  {
    kind: 'step',
    toolCalls: 0,
    text: 'The file adds a retry loop around the upload and logs each attempt.',
    changeHeader: false,
    skipLastTool: false,
  },
  { kind: 'end-turn' },
];

/** At least `size` events, cut to exactly `size` at the end of the last whole cycle's events. */
export function workloadEvents(size: number, sessionId = 'bench'): SessionEvent[] {
  return workloadDriver(size, sessionId).session.events.slice(0, size);
}

/** The workload run to at least `size` events; its `steps` hold each step's request and the log length it derives from. */
export function workloadDriver(size: number, sessionId = 'bench'): LogDriver {
  const driver = new LogDriver(sessionId);
  while (driver.session.head < size) driver.run(CYCLE);
  return driver;
}

/** A log of about `size` events that ends inside an open step, ready for a request (what the gate sees). */
export function pendingStepEvents(size: number, sessionId = 'bench'): SessionEvent[] {
  const driver = new LogDriver(sessionId);
  while (driver.session.head < size) driver.run(CYCLE);
  driver.run([{ kind: 'send', origin: 'followup', text: 'One more.' }]);
  const s = driver.session;
  const turn = s.state.lastTurn + 1;
  const messageId = [...s.state.queue.keys()][0] ?? 'missing';
  driver.append(
    { type: 'turn/start', at: 1, turn },
    { type: 'inbox/claim', at: 1, turn, step: 1, messageIds: [messageId] },
    { type: 'step/start', at: 1, turn, step: 1 },
    { type: 'user/message', at: 1, turn, step: 1, messageId, origin: 'followup', content: 'One more.' },
  );
  return [...s.events];
}
