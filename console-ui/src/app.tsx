// The console's page: the token field, the session list, and the selected session.
import { useState } from 'preact/hooks';
import { readToken, saveToken } from './token-store.js';
import { SessionListView } from './session-list.js';
import { SessionView } from './session-view.js';
import { EvalView } from './eval-view.js';

export function App() {
  const [token, setToken] = useState(readToken);
  // The open session lives in the address (#session=<id>): a reload, a bookmark or a shared link opens it again.
  const [selected, setSelectedState] = useState<string | null>(sessionInHash);
  const setSelected = (id: string | null): void => {
    setSelectedState(id);
    history.replaceState(
      null,
      '',
      id === null ? location.pathname + location.search : `#session=${encodeURIComponent(id)}`,
    );
  };
  const [evalRun, setEvalRun] = useState<string | null>(null);
  const [evalInput, setEvalInput] = useState('');
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
        <form
          aria-label="Open an eval run"
          onSubmit={(e) => {
            e.preventDefault();
            if (evalInput.trim() !== '') setEvalRun(evalInput.trim());
          }}
        >
          <label>
            Eval run <input value={evalInput} onInput={(e) => setEvalInput(e.currentTarget.value)} />
          </label>{' '}
          <button type="submit">Show eval</button>
        </form>
      </header>
      {evalRun !== null && <EvalView key={evalRun} runId={evalRun} onClose={() => setEvalRun(null)} />}
      <div class="layout">
        <SessionListView selected={selected} onSelect={setSelected} />
        {selected !== null && <SessionView key={selected} sessionId={selected} onSelect={setSelected} />}
      </div>
    </main>
  );
}

function sessionInHash(): string | null {
  const id = new URLSearchParams(location.hash.slice(1)).get('session');
  return id !== null && id !== '' ? id : null;
}
