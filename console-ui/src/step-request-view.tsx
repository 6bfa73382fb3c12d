// "What the model saw" for one step: the request re-derived from the log, whether its digest matches what
// was recorded as sent, how it relates to the previous step's request (what a prefix cache sees), and the
// messages themselves as the model received them.
import { useEffect } from 'preact/hooks';
import type { StepRequest } from '../../src/console/console-api.js';
import { CONSOLE_ROUTES } from '../../src/console/console-api.js';
import { apiGet, routePath } from './api-client.js';
import { plural } from './format.js';
import { RequestMessages } from './request-messages.js';
import { usePolling } from './use-polling.js';

/** How many messages the request shares with the previous one, from the start, in words. */
export function sharedText(n: number): string {
  if (n === 0) return 'No message is shared with it';
  return n === 1 ? 'The first message is shared' : `The first ${n} messages are shared`;
}

export function StepRequestView(props: {
  sessionId: string;
  turn: number;
  step: number;
  onClose: () => void;
  /** Called once the request is shown (the page may scroll to it then). */
  onLoaded?: () => void;
}) {
  const path = routePath(CONSOLE_ROUTES.request, { id: props.sessionId, turn: props.turn, step: props.step });
  // A sent request never changes: load once (the long interval only matters if the first load failed).
  const request = usePolling(() => apiGet<StepRequest>(path), 60_000, path);
  const r = request.value;
  const loaded = r !== null;
  useEffect(() => {
    if (loaded) props.onLoaded?.();
  }, [loaded]);
  return (
    <section class="step-request" role="region" aria-label={`Request of turn ${props.turn} step ${props.step}`}>
      <h3>
        What the model saw — turn {props.turn}, step {props.step}{' '}
        <button type="button" onClick={props.onClose}>
          Close request
        </button>
      </h3>
      {request.error !== null && <p role="alert">{request.error}</p>}
      {r === null && request.error === null && <p>Loading…</p>}
      {r !== null && (
        <>
          <p class={`digest ${r.verified ? 'ok' : 'bad'}`}>
            Digest {r.verified ? 'verified' : 'NOT verified'}: re-derived <code>{r.digest.slice(0, 16)}</code>, recorded{' '}
            <code>{r.recordedDigest.slice(0, 16)}</code>
          </p>
          <div role="group" aria-label="Diff against the previous request" class="diff">
            <h4>Diff against the previous request</h4>
            {r.diff.previous === null ? (
              <p>First request of the session: nothing to compare.</p>
            ) : (
              <ul>
                <li>
                  Compared with turn {r.diff.previous.turn}, step {r.diff.previous.step}
                </li>
                <li>{sharedText(r.diff.commonPrefix)}</li>
                <li>{r.diff.appended === 0 ? 'Nothing appended' : `${plural(r.diff.appended, 'message')} appended`}</li>
                <li class={r.diff.prefixBrokeAt === null ? 'ok' : 'bad'}>
                  {r.diff.prefixBrokeAt === null
                    ? 'Prefix intact'
                    : `Prefix broke at message ${r.diff.prefixBrokeAt}: ${r.diff.reason ?? 'no reason recorded'}`}
                </li>
                <li>Header {r.diff.headerChanged ? 'changed' : 'unchanged'}</li>
              </ul>
            )}
          </div>
          <RequestMessages body={r.body} appended={r.diff.previous === null ? null : r.diff.appended} />
          <details>
            <summary>Wire body (JSON)</summary>
            <pre>{JSON.stringify(r.body, null, 2)}</pre>
          </details>
        </>
      )}
    </section>
  );
}
