// The console's page: the token field, the session list, and the selected session.
import { useState } from 'preact/hooks';
import { readToken, saveToken } from './token-store.js';
import { SessionListView } from './session-list.js';
import { SessionView } from './session-view.js';

export function App() {
  const [token, setToken] = useState(readToken);
  const [selected, setSelected] = useState<string | null>(null);
  return (
    <main>
      <header class="top">
        <h1>durable-harness console</h1>
        {/* A form, so the password field is where browsers expect it; submitting does nothing. */}
        <form onSubmit={(e) => e.preventDefault()}>
          <label>
            Bearer token{' '}
            <input
              type="password"
              autoComplete="off"
              value={token}
              onInput={(e) => {
                setToken(e.currentTarget.value);
                saveToken(e.currentTarget.value);
              }}
            />
          </label>
        </form>
      </header>
      <div class="layout">
        <SessionListView selected={selected} onSelect={setSelected} />
        {selected !== null && <SessionView key={selected} sessionId={selected} onSelect={setSelected} />}
      </div>
    </main>
  );
}
