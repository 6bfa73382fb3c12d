// Child process for the cross-process race tests: opens a store from a spec, prints `ready`, waits for
// `go` on stdin so all racers start together, appends once and prints the outcome as one JSON line.
// Usage: node --import tsx test/helpers/append-worker.ts <spec> <sessionId> <expectedSeq> <eventsJson>
import { createInterface } from 'node:readline';
import type { SessionEvent } from '../../src/core/events.js';
import { openSessionStore } from '../../src/stores/open-session-store.js';
import type { AppendResult } from '../../src/stores/session-store.js';

export type WorkerOutcome = { ok: true; result: AppendResult } | { ok: false; code: string | null; message: string };

const [spec, sessionId, expectedSeq, eventsJson] = process.argv.slice(2);
if (spec === undefined || sessionId === undefined || expectedSeq === undefined || eventsJson === undefined) {
  throw new Error('usage: append-worker.ts <spec> <sessionId> <expectedSeq> <eventsJson>');
}
const events = JSON.parse(eventsJson) as SessionEvent[];
const store = await openSessionStore(spec);
const lines = createInterface({ input: process.stdin });
const go = new Promise<void>((resolve) => lines.on('line', (line) => line.trim() === 'go' && resolve()));
process.stdout.write('ready\n');
await go;
lines.close();
let outcome: WorkerOutcome;
try {
  outcome = { ok: true, result: await store.append(sessionId, Number(expectedSeq), events) };
} catch (error) {
  const code = (error as { code?: unknown }).code;
  outcome = { ok: false, code: typeof code === 'string' ? code : null, message: String(error) };
}
await store.close();
process.stdout.write(`${JSON.stringify(outcome)}\n`);
