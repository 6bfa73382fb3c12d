// Loads a value now and again every `intervalMs` while the component is shown; `reload` fetches at once.
import { useCallback, useEffect, useState } from 'preact/hooks';
import { describeError } from './api-client.js';

export interface Polled<T> {
  readonly value: T | null;
  readonly error: string | null;
  readonly reload: () => void;
}

export function usePolling<T>(load: (() => Promise<T>) | null, intervalMs: number, key: string): Polled<T> {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    setValue(null);
    setError(null);
  }, [key]);
  useEffect(() => {
    if (load === null) return undefined;
    let live = true;
    // Responses can arrive out of order (a slow poll after a quicker reload): keep only the newest asked.
    let asked = 0;
    let shown = 0;
    const run = (): void => {
      const n = ++asked;
      load().then(
        (v) => {
          if (!live || n < shown) return;
          shown = n;
          setValue(v);
          setError(null);
        },
        (e: unknown) => {
          if (live) setError(describeError(e));
        },
      );
    };
    run();
    const timer = setInterval(run, intervalMs);
    return () => {
      live = false;
      clearInterval(timer);
    };
    // `load` changes identity each render; the key says when it means something else.
  }, [key, tick, intervalMs]);
  return { value, error, reload };
}
