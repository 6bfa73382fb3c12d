// The live session list: status, turns, tokens, cache-read share, last activity; a status filter; subagents
// drawn under their parents (the API answers parents followed by their children, with `depth`).
import { useState } from 'preact/hooks';
import type { SessionList } from '../../src/console/console-api.js';
import { CONSOLE_ROUTES } from '../../src/console/console-api.js';
import { apiGet } from './api-client.js';
import { ago, percent } from './format.js';
import { usePolling } from './use-polling.js';

const STATUSES = ['', 'running', 'idle', 'closed', 'completed', 'failed', 'terminated', 'unknown'];

export function SessionListView(props: { selected: string | null; onSelect: (id: string) => void }) {
  const [status, setStatus] = useState('');
  const query = status === '' ? '' : `?status=${encodeURIComponent(status)}`;
  const list = usePolling(() => apiGet<SessionList>(CONSOLE_ROUTES.sessions + query), 2000, status);
  return (
    <section aria-label="Sessions">
      <h2>Sessions</h2>
      <label>
        Status{' '}
        <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s === '' ? 'all' : s}
            </option>
          ))}
        </select>
      </label>
      {list.error !== null && <p role="alert">{list.error}</p>}
      <table>
        <thead>
          <tr>
            <th>Session</th>
            <th>Status</th>
            <th>Turns</th>
            <th>Tokens</th>
            <th>Cache read</th>
            <th>Last activity</th>
          </tr>
        </thead>
        <tbody>
          {(list.value?.sessions ?? []).map((s) => (
            <tr key={s.sessionId} aria-selected={s.sessionId === props.selected}>
              <td style={{ paddingLeft: `${0.5 + s.depth * 1.25}em` }}>
                {s.depth > 0 ? '└ ' : ''}
                <button type="button" class="link" onClick={() => props.onSelect(s.sessionId)}>
                  {s.sessionId}
                </button>
              </td>
              <td>{s.status}</td>
              <td>{s.turns}</td>
              <td>{s.tokens}</td>
              <td>{percent(s.cacheReadShare)}</td>
              <td>{ago(s.lastActivity)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.value?.sessions.length === 0 && <p>No sessions.</p>}
    </section>
  );
}
