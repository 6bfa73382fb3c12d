// An in-process side channel, for `:memory:` stores and embedders that run viewer and worker in one
// process; it keeps the same cursor, attempt and pruning semantics as the store-backed ones.
import {
  coalesce,
  MAX_DELTAS_PER_SESSION,
  type DeltaChannel,
  type LiveDelta,
  type LiveDeltaDraft,
} from './delta-channel.js';

export class MemoryDeltaChannel implements DeltaChannel {
  readonly #rows = new Map<string, LiveDelta[]>();
  readonly #waiters = new Map<string, Set<() => void>>();
  #nextId = 1;

  publish(delta: LiveDeltaDraft): void {
    const rows = this.#rows.get(delta.sessionId) ?? [];
    this.#rows.set(delta.sessionId, rows);
    const [merged] = coalesce([delta]);
    if (merged === undefined) return;
    rows.push({ ...merged, id: this.#nextId++ });
    if (rows.length > MAX_DELTAS_PER_SESSION) rows.splice(0, rows.length - MAX_DELTAS_PER_SESSION);
    for (const wake of [...(this.#waiters.get(delta.sessionId) ?? [])]) wake();
  }

  flush(): Promise<void> {
    return Promise.resolve();
  }

  read(sessionId: string, afterId: number, limit = 10_000): Promise<LiveDelta[]> {
    return Promise.resolve((this.#rows.get(sessionId) ?? []).filter((r) => r.id > afterId).slice(0, limit));
  }

  wait(sessionId: string, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const waiters = this.#waiters.get(sessionId) ?? new Set<() => void>();
      this.#waiters.set(sessionId, waiters);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      waiters.add(done);
    });
  }

  pruneBefore(sessionId: string, turn: number, step: number): Promise<number> {
    const rows = this.#rows.get(sessionId) ?? [];
    const kept = rows.filter((r) => r.turn > turn || (r.turn === turn && r.step >= step));
    this.#rows.set(sessionId, kept);
    return Promise.resolve(rows.length - kept.length);
  }

  count(sessionId: string): Promise<number> {
    return Promise.resolve(this.#rows.get(sessionId)?.length ?? 0);
  }

  close(): Promise<void> {
    for (const waiters of this.#waiters.values()) for (const wake of [...waiters]) wake();
    return Promise.resolve();
  }
}
