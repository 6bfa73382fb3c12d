// Cost growth of the core: derivation per appended event (must stay flat as the log grows) and the
// outbound gate per step, cold and warm (both read every row; warm validates only new ones).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSessionRequest, Session, type SessionEvent } from '../src/core/index.js';
import { OutboundGate } from '../src/activities/outbound-gate.js';
import { warmGateMs } from './gate-timing.js';
import { SqliteSessionStore } from '../src/stores/sqlite-session-store.js';
import { fmt, median, medianMs, type BenchSection } from './measure.js';
import { pendingStepEvents, workloadEvents } from './log-workload.js';

const SIZES = [1_000, 10_000, 100_000] as const;
const TAIL = 1_000;

/**
 * Median microseconds per event to append (validate + project) the last TAIL events of a log of
 * `size`. Each run builds the head untimed, then times only the tail appends.
 */
function appendCostPerEvent(events: readonly SessionEvent[], runs = 5): number {
  const head = events.slice(0, events.length - TAIL);
  const tail = events.slice(events.length - TAIL);
  const perEvent: number[] = [];
  for (let run = 0; run < runs + 1; run++) {
    const session = new Session('bench', head);
    const fresh = JSON.parse(JSON.stringify(tail)) as SessionEvent[]; // as read from a store: not yet frozen
    const start = performance.now();
    session.appendEvents(fresh);
    const elapsed = performance.now() - start;
    if (run > 0) perEvent.push((elapsed * 1000) / TAIL); // run 0 warms up
  }
  return median(perEvent);
}

export async function logCoreBench(): Promise<BenchSection[]> {
  const derivationRows: string[] = [];
  const gateRows: string[] = [];
  let derivationBaseline = 0;
  const dir = mkdtempSync(join(tmpdir(), 'dh-bench-gate-'));
  appendCostPerEvent(workloadEvents(20_000), 3); // JIT warm-up, so the first size is not penalized
  try {
    for (const size of SIZES) {
      const perEvent = appendCostPerEvent(workloadEvents(size));
      if (size === SIZES[0]) derivationBaseline = perEvent;
      derivationRows.push(
        `| ${size.toLocaleString('en')} | ${fmt(perEvent)} µs | ${fmt(perEvent / derivationBaseline)}× |`,
      );

      const events = pendingStepEvents(size, `gate-${size}`);
      const store = SqliteSessionStore.open(join(dir, `gate-${size}.db`));
      await store.create(`gate-${size}`, { createdAt: 0 });
      for (let i = 0; i < events.length; i += 5_000) await store.append(`gate-${size}`, i, events.slice(i, i + 5_000));
      const request = buildSessionRequest(new Session(`gate-${size}`, events));
      const readMs = await medianMs(9, () => store.read(`gate-${size}`));
      const coldMs = await medianMs(9, () => new OutboundGate(store).verify(request));
      const warmMs = await warmGateMs(store, `gate-${size}-warm`, size);
      gateRows.push(
        `| ${events.length.toLocaleString('en')} | ${request.messages.length.toLocaleString('en')} | ${fmt(readMs)} ms | ${fmt(coldMs)} ms | ${fmt(coldMs / readMs)}× | ${fmt(warmMs)} ms | ${fmt(warmMs / readMs)}× |`,
      );
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return [
    {
      title: 'Derivation cost per appended event',
      command: 'npm run bench -- --only core',
      body: [
        'Median time to append one event to a live `Session` (lossless-JSON check, zod schema, structural rules,',
        'per-event projection into the cached surface), measured over the last 1,000 events of a log of each size.',
        'Baseline: the same measurement at 1,000 events. Flat means amortized O(1).',
        '',
        '| log size (events) | per event | vs 1k |',
        '| ---: | ---: | ---: |',
        ...derivationRows,
      ].join('\n'),
    },
    {
      title: 'Outbound gate cost per step',
      command: 'npm run bench -- --only core',
      body: [
        'Median time of the outbound gate (`OutboundGate.verify`: a fresh read of every row from SQLite, the',
        'rebuild from what was read and a field-by-field, message-by-message comparison) against its baseline:',
        'a plain `store.read` of the whole log (every row parsed, schema-checked and digested), same run.',
        "Cold: a gate that has not seen the session (a worker's first step for it): every row validated in full",
        "by the read (once: the gate's session admits what the read validated, checking the log's structure).",
        'Warm: the steady state, median of the last 9 steps of the log, each step appended just before its',
        'gate: every row is still fetched and compared byte for byte with what the gate verified before, but',
        'only changed or new rows are validated and derived again.',
        '',
        '| log size (events) | messages | store.read | cold gate | cold / read | warm gate | warm / read |',
        '| ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
        ...gateRows,
      ].join('\n'),
    },
  ];
}
