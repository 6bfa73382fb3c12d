// One session: its facts and actions, the latency waterfall and cost by model, and the timeline as a
// conversation (the answer streaming now at its end) whose steps the keyboard walks (see use-step-keys.ts). A step's request ("what
// the model saw") opens inside its card; the address then names the step, so the link reopens it there.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { SessionDetail, SessionEvents, Timeline } from '../../src/console/console-api.js';
import { CONSOLE_ROUTES } from '../../src/console/console-api.js';
import { ActionPanel } from './action-panel.js';
import { apiGet, routePath } from './api-client.js';
import { ConversationView } from './conversation-view.js';
import { CostByModel } from './cost-by-model.js';
import { showRoute, stepKey, type StepRef } from './hash-route.js';
import { QueuedMessages, SessionFacts } from './session-facts.js';
import { StepRequestView } from './step-request-view.js';
import { StepWaterfall } from './step-waterfall.js';
import { UsageCharts } from './usage-charts.js';
import { useLiveFollow } from './use-live-follow.js';
import { usePolling } from './use-polling.js';
import { useStepKeys } from './use-step-keys.js';

export interface SessionViewProps {
  readonly sessionId: string;
  /** A step to open and focus (from a permalink); `targetNonce` changes each time it is asked for again. */
  readonly target: StepRef | null;
  readonly targetNonce: number;
  readonly onSelect: (id: string) => void;
}

function parseKey(key: string): StepRef {
  const [turn, step] = key.split('.').map(Number);
  return { turn: turn ?? 0, step: step ?? 0 };
}

/** Brings a step's card into view unless its top already is. */
function reveal(element: HTMLElement | undefined, always = false): void {
  if (element === undefined) return;
  const top = element.getBoundingClientRect().top;
  if (always || top < 0 || top > window.innerHeight - 48) element.scrollIntoView({ block: 'start' });
}

export function SessionView(props: SessionViewProps) {
  const id = props.sessionId;
  const detail = usePolling(() => apiGet<SessionDetail>(routePath(CONSOLE_ROUTES.session, { id })), 2000, id);
  const timeline = usePolling(() => apiGet<Timeline>(routePath(CONSOLE_ROUTES.timeline, { id })), 2000, id);
  const events = usePolling(() => apiGet<SessionEvents>(routePath(CONSOLE_ROUTES.events, { id })), 2000, id);
  const { live, note, waiting } = useLiveFollow(id, () => {
    // A new event or status: re-read the views now instead of at the next poll.
    detail.reload();
    timeline.reload();
    events.reload();
  });
  const [open, setOpenState] = useState<StepRef | null>(null);
  const [focused, setFocused] = useState<string | null>(null);
  const [raw, setRaw] = useState(false);
  const cards = useRef(new Map<string, HTMLElement>());
  // The step to scroll to once its request has loaded (its card grows then).
  const revealAfterLoad = useRef<string | null>(null);
  const appliedTarget = useRef<string | null>(null);

  const setOpen = (step: StepRef | null): void => {
    setOpenState(step);
    showRoute({ sessionId: id, step });
  };
  const focusStep = (key: string, always = false): void => {
    setFocused(key);
    const card = cards.current.get(key);
    card?.focus({ preventScroll: true });
    reveal(card, always);
  };
  const order = (timeline.value?.turns ?? []).flatMap((t) => t.steps.map(stepKey));
  useStepKeys({
    order,
    focused,
    move: (key) => focusStep(key),
    toggle: (key) => setOpen(open !== null && stepKey(open) === key ? null : parseKey(key)),
    close: () => open !== null && setOpen(null),
  });

  // A permalink: once the timeline has the step, open its request, focus it and scroll to it.
  useEffect(() => {
    const target = props.target;
    if (target === null) return;
    const key = stepKey(target);
    const marker = `${props.targetNonce}:${key}`;
    if (appliedTarget.current === marker || !order.includes(key)) return;
    appliedTarget.current = marker;
    setOpenState(target);
    revealAfterLoad.current = key;
    focusStep(key, true);
  }, [props.target, props.targetNonce, order.join(' ')]);

  const d = detail.value;
  const t = timeline.value;
  const all = events.value?.events ?? [];
  return (
    <section aria-label={`Session ${id}`} class="session">
      <h2 class="session-title" title={id}>
        Session {id}
      </h2>
      {[detail.error, timeline.error, events.error].map(
        (e, i) =>
          e !== null && (
            <p key={i} role="alert">
              {e}
            </p>
          ),
      )}
      {note !== null && (
        <p role="status" class="warning" data-testid="live-note">
          {note}
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
        <div class="session-top">
          <div>
            <SessionFacts detail={d} timeline={t} />
            <QueuedMessages detail={d} />
          </div>
          <ActionPanel detail={d} onDone={detail.reload} />
        </div>
      )}
      {t !== null && (t.costByModel?.length ?? 0) + order.length > 0 && (
        <div class="metrics">
          <StepWaterfall timeline={t} onPick={(step) => focusStep(stepKey(step), true)} />
          <CostByModel models={t.costByModel ?? []} />
        </div>
      )}
      <section aria-label="Timeline" class="timeline">
        <div class="timeline-head">
          <h3>Conversation</h3>
          <span class="muted keys-hint">j / k or ↓ / ↑ move between steps · Enter: what the model saw</span>
          <button type="button" aria-pressed={raw} onClick={() => setRaw(!raw)}>
            Raw events
          </button>
        </div>
        {t !== null && (
          <ConversationView
            sessionId={id}
            timeline={t}
            events={all}
            raw={raw}
            focused={focused}
            open={open}
            onToggleRequest={(step) => setOpen(open !== null && stepKey(open) === stepKey(step) ? null : step)}
            onFocus={(step) => setFocused(stepKey(step))}
            live={live.step}
            onForked={props.onSelect}
            register={(key, el) => {
              if (el === null) cards.current.delete(key);
              else cards.current.set(key, el);
            }}
            request={(step) => (
              <StepRequestView
                key={stepKey(step)}
                sessionId={id}
                turn={step.turn}
                step={step.step}
                onClose={() => setOpen(null)}
                onLoaded={() => {
                  if (revealAfterLoad.current !== stepKey(step)) return;
                  revealAfterLoad.current = null;
                  reveal(cards.current.get(stepKey(step)), true);
                }}
              />
            )}
          />
        )}
      </section>
      {t !== null && order.length > 0 && <UsageCharts timeline={t} />}
    </section>
  );
}
