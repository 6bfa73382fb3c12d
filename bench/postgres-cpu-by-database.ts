// CPU of a PostgreSQL server's client backends by database, sampled while a run goes on: every live backend's
// /proc CPU time as last seen, summed per database. A backend that exits between two samples takes what it
// spent after the last one with it (the server's total, postgresCpuMs, still counts it): the rest is "other".
import type pg from 'pg';
import { cpuMs } from './cluster-processes.js';

interface Backend {
  readonly database: string;
  /** CPU time when first seen (0 for a backend born during the sampling). */
  readonly first: number;
  last: number;
}

export class PostgresCpuByDatabase {
  readonly #backends = new Map<number, Backend>();
  #timer: NodeJS.Timeout | undefined;
  #sampling: Promise<void> = Promise.resolve();
  #samples = 0;

  constructor(
    private readonly admin: pg.Pool,
    /** A role whose backends are left out (a measuring client's own), counted as "other" instead. */
    private readonly excludeRole: string,
    private readonly intervalMs = 200,
  ) {}

  /** Takes the first sample (what every backend has spent so far is not counted), then samples on a timer. */
  async start(): Promise<void> {
    await this.#sample();
    this.#timer = setInterval(() => {
      this.#sampling = this.#sampling.then(() => this.#sample()).catch(() => undefined);
    }, this.intervalMs);
  }

  /** Backends first seen after the first sample (connections opened during the run), per database name. */
  born(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const backend of this.#backends.values()) {
      if (backend.first === 0) counts.set(backend.database, (counts.get(backend.database) ?? 0) + 1);
    }
    return counts;
  }

  /** Takes a last sample; CPU ms per database name since `start`. */
  async stop(): Promise<Map<string, number>> {
    clearInterval(this.#timer);
    await this.#sampling;
    await this.#sample();
    const spent = new Map<string, number>();
    for (const backend of this.#backends.values()) {
      spent.set(backend.database, (spent.get(backend.database) ?? 0) + backend.last - backend.first);
    }
    return spent;
  }

  async #sample(): Promise<void> {
    const { rows } = await this.admin.query<{ pid: number; datname: string | null }>(
      "SELECT pid, datname FROM pg_stat_activity WHERE backend_type = 'client backend' AND usename <> $1",
      [this.excludeRole],
    );
    const firstSample = this.#samples++ === 0;
    for (const { pid, datname } of rows) {
      const now = cpuMs(pid);
      const known = this.#backends.get(pid);
      if (known) {
        // Lower (0): it exited after the query listed it; what it spent is its last sample.
        if (now >= known.last) known.last = now;
        continue;
      }
      this.#backends.set(pid, { database: datname ?? '(none)', first: firstSample ? now : 0, last: now });
    }
  }
}
