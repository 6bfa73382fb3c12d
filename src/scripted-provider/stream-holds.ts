// Named points where a scripted stream waits until the test releases it (`ScriptedProvider.release(key)`):
// a step held mid-stream for exactly as long as a test needs, whatever the machine's load.

export class StreamHolds {
  readonly #released = new Set<string>();
  readonly #waiting = new Map<string, Array<() => void>>();

  /** Lets every stream held at `key` go on, now and later. */
  release(key: string): void {
    this.#released.add(key);
    for (const resume of this.#waiting.get(key) ?? []) resume();
    this.#waiting.delete(key);
  }

  /** Resolves once `key` is released; rejects (AbortError) when `signal` aborts first. */
  wait(key: string, signal: AbortSignal): Promise<void> {
    if (this.#released.has(key)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason as Error);
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      const waiting = this.#waiting.get(key) ?? [];
      waiting.push(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      });
      this.#waiting.set(key, waiting);
    });
  }
}
