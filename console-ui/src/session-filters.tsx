// The session list's filters: status, text (in the messages or the id), a start-time range and the page size.
// Each change applies at once (the text after a short pause), and starts again from the first page.
import { useEffect, useState } from 'preact/hooks';

export interface ListFilters {
  readonly status: string;
  readonly q: string;
  /** `datetime-local` values (local time), '' when unset. */
  readonly since: string;
  readonly until: string;
  readonly limit: number;
}

export const DEFAULT_FILTERS: ListFilters = { status: '', q: '', since: '', until: '', limit: 50 };

const STATUSES = ['', 'running', 'idle', 'closed', 'completed', 'failed', 'terminated', 'unknown'];
const TEXT_PAUSE_MS = 300;

/** The API query for a page of the list under `filters` (`since`/`until` as epoch ms: no time-zone guessing). */
export function listQuery(filters: ListFilters, pageToken: string | null): string {
  const params = new URLSearchParams();
  if (filters.status !== '') params.set('status', filters.status);
  if (filters.q.trim() !== '') params.set('q', filters.q.trim());
  for (const name of ['since', 'until'] as const) {
    const at = filters[name] === '' ? NaN : new Date(filters[name]).getTime();
    if (Number.isFinite(at)) params.set(name, String(at));
  }
  params.set('limit', String(filters.limit));
  if (pageToken !== null) params.set('pageToken', pageToken);
  return `?${params.toString()}`;
}

export function SessionFilters(props: { filters: ListFilters; onChange: (patch: Partial<ListFilters>) => void }) {
  const f = props.filters;
  // The text box keeps its own value while typing; the list follows once typing pauses.
  const [text, setText] = useState(f.q);
  useEffect(() => {
    if (text === f.q) return undefined;
    const timer = setTimeout(() => props.onChange({ q: text }), TEXT_PAUSE_MS);
    return () => clearTimeout(timer);
  }, [text]);
  const set = props.onChange;
  return (
    <form class="filters" aria-label="Filter sessions" onSubmit={(e) => e.preventDefault()}>
      <label>
        Status{' '}
        <select value={f.status} onChange={(e) => set({ status: e.currentTarget.value })}>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s === '' ? 'all' : s}
            </option>
          ))}
        </select>
      </label>
      <label>
        Search{' '}
        <input
          type="search"
          placeholder="text or id"
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          // Enter applies without waiting for the pause.
          onKeyDown={(e) => e.key === 'Enter' && set({ q: e.currentTarget.value })}
        />
      </label>
      <label>
        Started after{' '}
        <input type="datetime-local" value={f.since} onInput={(e) => set({ since: e.currentTarget.value })} />
      </label>
      <label>
        Started before{' '}
        <input type="datetime-local" value={f.until} onInput={(e) => set({ until: e.currentTarget.value })} />
      </label>
      <label>
        Per page{' '}
        <input
          type="number"
          min={1}
          max={500}
          value={f.limit}
          onInput={(e) => {
            const n = Math.trunc(Number(e.currentTarget.value));
            if (n >= 1 && n <= 500) set({ limit: n });
          }}
        />
      </label>
    </form>
  );
}
