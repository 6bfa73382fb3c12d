// Forks a session with one click where a fork can start: after a turn ended (a fork point inside an open turn is
// refused). The page knows the seq from the log; the new session opens at once, and a refusal shows beside it.
import { useState } from 'preact/hooks';
import type { ForkRequest, ForkResponse } from '../../src/console/console-api.js';
import { CONSOLE_ROUTES } from '../../src/console/console-api.js';
import { apiPost, describeError, routePath } from './api-client.js';

export function ForkButton(props: {
  sessionId: string;
  /** The fork keeps the session's first `atSeq` events: up to and with the turn's end. */
  atSeq: number;
  turn: number;
  onForked: (sessionId: string) => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const fork = (): void => {
    setBusy(true);
    setError(null);
    const body: ForkRequest = { atSeq: props.atSeq };
    apiPost<ForkResponse>(routePath(CONSOLE_ROUTES.fork, { id: props.sessionId }), body).then(
      (created) => {
        setBusy(false);
        props.onForked(created.sessionId);
      },
      (e: unknown) => {
        setBusy(false);
        setError(describeError(e));
      },
    );
  };
  return (
    <>
      <button
        type="button"
        disabled={busy}
        title={`a new session with this conversation up to the end of turn ${props.turn}`}
        aria-label={`Fork from here, after turn ${props.turn}`}
        onClick={fork}
      >
        Fork from here
      </button>
      {error !== null && (
        <span role="alert" aria-label="Fork result" class="bad fork-error">
          {error}
        </span>
      )}
    </>
  );
}
