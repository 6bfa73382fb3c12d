// The console's page: the token field (once the server has asked for one), the session list, and the selected
// session. Where the page is lives in the address (hash-route.ts): a reload, a bookmark or a shared link opens
// the same session and step again.
import { useEffect, useState } from 'preact/hooks';
import { onTokenRequired, readToken, saveToken, tokenRequired } from './token-store.js';
import { SessionListView } from './session-list.js';
import { SessionView } from './session-view.js';
import { EvalView } from './eval-view.js';
import { parseHashRoute, showRoute, type HashRoute } from './hash-route.js';

export function App() {
  const [token, setToken] = useState(readToken);
  // On loopback the server takes no token: the field shows only after it refused a request for want of one
  // (or when a token came with the link, so it can be corrected).
  const [askToken, setAskToken] = useState(() => tokenRequired() || token !== '');
  useEffect(() => onTokenRequired(() => setAskToken(true)), []);
  const [route, setRoute] = useState<HashRoute>(() => parseHashRoute(location.hash));
  // Counts navigations, so following the same step's link again scrolls to it again.
  const [nonce, setNonce] = useState(0);
  useEffect(() => {
    const follow = () => {
      setRoute(parseHashRoute(location.hash));
      setNonce((n) => n + 1);
    };
    window.addEventListener('hashchange', follow);
    return () => window.removeEventListener('hashchange', follow);
  }, []);
  const select = (id: string | null): void => {
    const next = { sessionId: id, step: null };
    setRoute(next);
    showRoute(next, true);
  };
  const [evalRun, setEvalRun] = useState<string | null>(null);
  const [evalInput, setEvalInput] = useState('');
  return (
    <main>
      <header class="top">
        <h1>durable-harness console</h1>
        {/* A form, so the password field is where browsers expect it; submitting does nothing. */}
        {askToken && (
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
        )}
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
        <SessionListView selected={route.sessionId} />
        {route.sessionId !== null && (
          <SessionView
            key={route.sessionId}
            sessionId={route.sessionId}
            target={route.step}
            targetNonce={nonce}
            onSelect={select}
          />
        )}
      </div>
    </main>
  );
}
