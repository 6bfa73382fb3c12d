// Follows a session's live stream (resuming where sessionStorage says the page was): the streaming step's
// text and counts, a limiter wait, a note while the stream is down; `onChange` runs on every logged event or
// status change, so the views re-read the log and the state then instead of at their next poll.
import { useEffect, useState } from 'preact/hooks';
import type { LiveMessage } from '../../src/console/console-api.js';
import { CONSOLE_ROUTES } from '../../src/console/console-api.js';
import { routePath } from './api-client.js';
import { applyLive, loadLive, saveLive, type LiveState } from './live-resume.js';
import { followSse } from './sse-stream.js';

export interface LiveFollow {
  readonly live: LiveState;
  /** Why the stream is not flowing (stalled, dropped and reconnecting), or null. */
  readonly note: string | null;
  /** The rate limiter's line while the step waits for it, or null. */
  readonly waiting: string | null;
}

export function useLiveFollow(id: string, onChange: () => void): LiveFollow {
  // Restored from sessionStorage: a reload mid-stream shows the text so far and resumes right after it.
  const [live, setLive] = useState<LiveState>(() => loadLive(id));
  const [note, setNote] = useState<string | null>(null);
  const [waiting, setWaiting] = useState<string | null>(null);
  useEffect(() => {
    const abort = new AbortController();
    // Folded outside Preact's state so each message is saved with exactly the position it brings.
    let state = loadLive(id);
    setLive(state);
    void followSse(
      routePath(CONSOLE_ROUTES.live, { id }),
      abort.signal,
      (m) => {
        const message = JSON.parse(m.data) as LiveMessage;
        setNote(message.type === 'stalled' ? `live stream stalled (${message.reason}); it carries on` : null);
        // A limiter wait shows until anything else of the session arrives (its answer streams, an event).
        if (message.type === 'limiter-wait') setWaiting(message.label);
        else if (message.type === 'text' || message.type === 'event') setWaiting(null);
        const next = applyLive(state, message, m.id);
        if (next !== state) {
          state = next;
          saveLive(id, state);
          setLive(state);
        }
        if (message.type === 'event' || message.type === 'status') onChange();
      },
      {
        lastEventId: state.lastEventId,
        onDrop: (error, retryMs) =>
          setNote(`live stream ${error === null ? 'ended' : `failed: ${error}`}; reconnecting in ${retryMs} ms`),
      },
    );
    return () => abort.abort();
  }, [id]);
  return { live, note, waiting };
}
