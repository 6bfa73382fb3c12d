// One session: its state, charts, actions, live stream and timeline (turns → steps → their events, with
// the events between steps — inbox, approvals, compactions — in log order).
import { useEffect, useState } from 'preact/hooks';
import type {
  LiveMessage,
  SessionDetail,
  SessionEvents,
  Timeline,
  TimelineStep,
} from '../../src/console/console-api.js';
import { CONSOLE_ROUTES } from '../../src/console/console-api.js';
import type { SessionEvent } from '../../src/core/index.js';
import { ActionPanel } from './action-panel.js';
import { apiGet, routePath } from './api-client.js';
import { EventLine } from './event-line.js';
import { clip, percent } from './format.js';
import { applyLive, describeLiveUsage, loadLive, saveLive, type LiveState, type LiveStep } from './live-resume.js';
import { followSse } from './sse-stream.js';
import { StepRequestView } from './step-request-view.js';
import { UsageCharts } from './usage-charts.js';
import { usePolling } from './use-polling.js';

type Block = { kind: 'step'; seq: number; step: TimelineStep } | { kind: 'event'; seq: number; event: SessionEvent };

function blocks(timeline: Timeline, events: readonly SessionEvent[]): Block[] {
  const steps = timeline.turns.flatMap((t) => t.steps);
  const inStep = (seq: number) => steps.some((s) => seq >= s.fromSeq && seq <= s.toSeq);
  const out: Block[] = steps.map((step) => ({ kind: 'step' as const, seq: step.fromSeq, step }));
  for (const event of events) if (!inStep(event.seq)) out.push({ kind: 'event', seq: event.seq, event });
  return out.sort((a, b) => a.seq - b.seq);
}

export function SessionView(props: { sessionId: string; onSelect: (id: string) => void }) {
  const id = props.sessionId;
  const detail = usePolling(() => apiGet<SessionDetail>(routePath(CONSOLE_ROUTES.session, { id })), 2000, id);
  const timeline = usePolling(() => apiGet<Timeline>(routePath(CONSOLE_ROUTES.timeline, { id })), 2000, id);
  const events = usePolling(() => apiGet<SessionEvents>(routePath(CONSOLE_ROUTES.events, { id })), 2000, id);
  const [open, setOpen] = useState<{ turn: number; step: number } | null>(null);
  // Restored from sessionStorage: a reload mid-stream shows the text so far and resumes right after it.
  const [live, setLive] = useState<LiveState>(() => loadLive(id));
  const [liveNote, setLiveNote] = useState<string | null>(null);
  const [waiting, setWaiting] = useState<string | null>(null);

  useEffect(() => {
    const abort = new AbortController();
    // Folded outside Preact's state so each message is saved with exactly the position it brings.
    let state = loadLive(id);
    setLive(state);
    setOpen(null);
    void followSse(
      routePath(CONSOLE_ROUTES.live, { id }),
      abort.signal,
      (m) => {
        const message = JSON.parse(m.data) as LiveMessage;
        setLiveNote(message.type === 'stalled' ? `live stream stalled (${message.reason}); it carries on` : null);
        // A limiter wait shows until anything else of the session arrives (its answer streams, an event).
        if (message.type === 'limiter-wait') setWaiting(message.label);
        else if (message.type === 'text' || message.type === 'event') setWaiting(null);
        const next = applyLive(state, message, m.id);
        if (next !== state) {
          state = next;
          saveLive(id, state);
          setLive(state);
        }
        if (message.type === 'event' || message.type === 'status') {
          // A new event or status: refresh the views now instead of at the next poll.
          detail.reload();
          timeline.reload();
          events.reload();
        }
      },
      {
        lastEventId: state.lastEventId,
        onDrop: (error, retryMs) =>
          setLiveNote(`live stream ${error === null ? 'ended' : `failed: ${error}`}; reconnecting in ${retryMs} ms`),
      },
    );
    return () => abort.abort();
  }, [id]);

  const d = detail.value;
  const all = events.value?.events ?? [];
  return (
    <section aria-label={`Session ${id}`} class="session">
      <h2>Session {id}</h2>
      {[detail.error, timeline.error, events.error].map(
        (e, i) =>
          e !== null && (
            <p key={i} role="alert">
              {e}
            </p>
          ),
      )}
      {liveNote !== null && (
        <p role="status" class="warning" data-testid="live-note">
          {liveNote}
        </p>
      )}
      {waiting !== null && (
        <p role="status" class="waiting" data-testid="limiter-wait">
          ⏳ {waiting}
        </p>
      )}
      {d?.workerWarning != null && (
        <p role="alert" class="warning" data-testid="worker-warning">
          ⚠ {d.workerWarning.message}
        </p>
      )}
      {d !== null && (
        <dl class="facts">
          <dt>Status</dt>
          <dd data-testid="session-status">{d.state?.status ?? d.stateUnavailable ?? 'unknown'}</dd>
          <dt>Turns</dt>
          <dd>{d.turns}</dd>
          <dt>Head</dt>
          <dd>{d.head}</dd>
          <dt>Tokens in / cached / out</dt>
          <dd>
            {d.usage.inputUncached} / {d.usage.cacheRead} / {d.usage.output}
          </dd>
          <dt>Cache read</dt>
          <dd>{percent(d.cacheReadShare)}</dd>
          {d.parentSessionId !== null && (
            <>
              <dt>Parent</dt>
              <dd>
                <button type="button" class="link" onClick={() => props.onSelect(d.parentSessionId ?? '')}>
                  {d.parentSessionId}
                </button>
              </dd>
            </>
          )}
          {d.children.length > 0 && (
            <>
              <dt>Subagents</dt>
              <dd>
                {d.children.map((c) => (
                  <button key={c.sessionId} type="button" class="link" onClick={() => props.onSelect(c.sessionId)}>
                    {c.sessionId} ({c.ended})
                  </button>
                ))}
              </dd>
            </>
          )}
        </dl>
      )}
      {d !== null && d.queued.length > 0 && (
        <section aria-label="Queued messages" class="queued">
          <h3>Queued</h3>
          <ul>
            {d.queued.map((m) => (
              <li key={m.messageId} data-testid={`queued-${m.messageId}`}>
                <strong>{m.origin}</strong>
                {m.source !== null ? ` (${m.source})` : ''} → {m.target === 'next-step' ? 'next step' : 'next turn'}
                {m.downgraded ? ' (moved to the next turn by an interrupt)' : ''}: {m.preview}
              </li>
            ))}
          </ul>
        </section>
      )}
      {d !== null && <ActionPanel detail={d} onDone={detail.reload} onForked={props.onSelect} />}
      {live.step !== null && <LiveSection step={live.step} />}
      {timeline.value !== null && <UsageCharts timeline={timeline.value} />}
      {open !== null && <StepRequestView sessionId={id} {...open} onClose={() => setOpen(null)} />}
      <section aria-label="Timeline">
        <h3>Timeline</h3>
        {timeline.value !== null &&
          blocks(timeline.value, all).map((b) =>
            b.kind === 'event' ? (
              <ul key={`e${b.seq}`} class="loose">
                <EventLine event={b.event} />
              </ul>
            ) : (
              <StepBlock
                key={`s${b.step.turn}.${b.step.step}`}
                step={b.step}
                turnEnded={timeline.value?.turns.find((t) => t.turn === b.step.turn)?.ended ?? null}
                events={all.filter((e) => e.seq >= b.step.fromSeq && e.seq <= b.step.toSeq)}
                onOpen={() => setOpen({ turn: b.step.turn, step: b.step.step })}
              />
            ),
          )}
      </section>
    </section>
  );
}

function LiveSection(props: { step: LiveStep }) {
  const s = props.step;
  const usage = describeLiveUsage(s);
  return (
    <section aria-label="Live" class="live">
      <h3>
        Streaming turn {s.turn}, step {s.step}
      </h3>
      {usage !== null && <p data-testid="live-usage">{usage}</p>}
      <pre data-testid="live-text">{s.text}</pre>
    </section>
  );
}

function StepBlock(props: {
  step: TimelineStep;
  turnEnded: string | null;
  events: readonly SessionEvent[];
  onOpen: () => void;
}) {
  const s = props.step;
  const logged = props.events.find((e) => e.type === 'assistant/message');
  const answer = logged?.type === 'assistant/message' ? logged.content : null;
  return (
    <article class="step" aria-label={`Turn ${s.turn} step ${s.step}`}>
      <header>
        <strong>
          Turn {s.turn} · step {s.step}
        </strong>{' '}
        <span>
          {s.usage === null
            ? 'running'
            : `in ${s.usage.inputUncached} + cached ${s.usage.cacheRead}, out ${s.usage.output}`}
          {s.latencyMs === null ? '' : ` · ${s.latencyMs} ms`}
          {s.finishReason === null ? '' : ` · ${s.finishReason}`}
          {s.headerChanged ? ' · header changed' : ''}
        </span>{' '}
        {s.requestDigest !== null && (
          <button type="button" onClick={props.onOpen}>
            Request of turn {s.turn} step {s.step}
          </button>
        )}
      </header>
      <ul>
        {props.events.map((e) => (
          <EventLine key={e.seq} event={e} />
        ))}
      </ul>
      {answer !== null && clip(answer) !== answer && (
        // The event line clips a long answer; the whole of it, as logged, is one click away.
        <details>
          <summary>Whole answer ({answer.length} characters)</summary>
          <pre data-testid="step-answer">{answer}</pre>
        </details>
      )}
    </article>
  );
}
