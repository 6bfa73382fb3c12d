// Named failpoints for crash tests: where an armed worker kills itself with SIGKILL. Inert unless
// DH_FAILPOINTS names them (comma-separated); each hit is appended to DH_FAILPOINT_LOG first.
import { appendFileSync } from 'node:fs';

export const FAILPOINTS = [
  /** Inside a model stream, after the first streamed delta. */
  'model-streaming',
  /** After the model answer is appended, before the activity reports completion. */
  'model-after-append',
  /** While a tool runs, after its `tool/start` is logged. */
  'tool-running',
  /** After a tool result is appended, before the step ends. */
  'tool-after-append',
  /** Inside a compaction's summary stream (compact/start logged, no summary yet). */
  'compaction-summarizing',
  /**
   * Around a continue-as-new: a delay after a `turn/end` was appended (see `failpointAfter`), on a server
   * that suggests continue-as-new at every turn boundary, so the kill lands while the workflow task that
   * hands over to the next run is in flight. The workflow sandbox has no failpoints of its own: the test
   * worker (test/helpers/worker-process.ts) arms this one in its store, after the append returns.
   */
  'continue-as-new',
] as const;
export type Failpoint = (typeof FAILPOINTS)[number];

const armed = new Set((process.env.DH_FAILPOINTS ?? '').split(',').filter((name) => name.length > 0));

export function failpointArmed(name: Failpoint): boolean {
  return armed.has(name);
}

/** Kills this process on the spot when `name` is armed; otherwise does nothing. */
export function failpoint(name: Failpoint): void {
  if (!armed.has(name)) return;
  const log = process.env.DH_FAILPOINT_LOG;
  if (log) appendFileSync(log, `${name} ${process.pid} ${Date.now()}\n`);
  process.kill(process.pid, 'SIGKILL');
}

const scheduled = new Set<Failpoint>();

/** Like `failpoint`, `delayMs` later (the code that reached it carries on meanwhile); once per process. */
export function failpointAfter(name: Failpoint, delayMs: number): void {
  if (!armed.has(name) || scheduled.has(name)) return;
  scheduled.add(name);
  setTimeout(() => failpoint(name), delayMs);
}
