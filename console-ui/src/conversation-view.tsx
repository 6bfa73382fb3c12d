// A session's timeline as a conversation: turn dividers, each model step as a card (see step-card.tsx), and
// between them what happened outside any step: compactions as a divider, how each turn ended, where a
// subagent or a fork came from; at the end, the answer streaming now. Queue bookkeeping (inbox events) shows
// only among the raw events.
import { Fragment, type JSX } from 'preact';
import type { Timeline, TimelineStep } from '../../src/console/console-api.js';
import type { EventOf, SessionEvent } from '../../src/core/index.js';
import { EventLine } from './event-line.js';
import { grouped } from './format.js';
import { routeHash, stepKey, type StepRef } from './hash-route.js';
import { LiveAnswer } from './live-answer.js';
import type { LiveStep } from './live-resume.js';
import { StepCard } from './step-card.js';

type Block =
  | { readonly kind: 'step'; readonly seq: number; readonly step: TimelineStep; readonly events: SessionEvent[] }
  | { readonly kind: 'event'; readonly seq: number; readonly event: SessionEvent };

/** The step an event belongs to, when it names one (`turn` and `step`): tool, approval and policy events too. */
function stepOf(e: SessionEvent): string | null {
  const r = e as { turn?: unknown; step?: unknown };
  return typeof r.turn === 'number' && typeof r.step === 'number' ? `${r.turn}.${r.step}` : null;
}

/** Steps and loose events in log order; a step stands where its first event does. */
export function conversationBlocks(timeline: Timeline, events: readonly SessionEvent[]): Block[] {
  const byStep = new Map<string, SessionEvent[]>();
  const steps = timeline.turns.flatMap((t) => t.steps);
  for (const s of steps) byStep.set(stepKey(s), []);
  const out: Block[] = [];
  for (const e of events) {
    const key = stepOf(e);
    const own = key === null ? undefined : byStep.get(key);
    if (own !== undefined) own.push(e);
    else out.push({ kind: 'event', seq: e.seq, event: e });
  }
  for (const step of steps) {
    const own = byStep.get(stepKey(step)) ?? [];
    out.push({ kind: 'step', seq: Math.min(step.fromSeq, own[0]?.seq ?? step.fromSeq), step, events: own });
  }
  return out.sort((a, b) => a.seq - b.seq);
}

/** What a compaction did, from its events: shown once, where it ended (or began, while it runs). */
function compactionLine(id: string, events: readonly SessionEvent[]): string {
  const of = <T extends SessionEvent['type']>(type: T) =>
    events.find((e): e is EventOf<T> => e.type === type && 'compactionId' in e && e.compactionId === id);
  const start = of('compact/start');
  const summary = of('compact/summary');
  const refused = of('compact/refused');
  const end = of('compact/end');
  const parts = [`Compaction (${start?.trigger ?? '?'})`];
  if (summary !== undefined) parts.push(`${grouped(summary.tokensBefore)} → ${grouped(summary.tokensAfter)} tokens`);
  if (refused !== undefined) parts.push(`summary refused: ${refused.error.message}`);
  parts.push(end === undefined ? 'running…' : end.outcome);
  return parts.join(' · ');
}

function LooseEvent(props: { event: SessionEvent; all: readonly SessionEvent[] }): JSX.Element | null {
  const e = props.event;
  switch (e.type) {
    case 'turn/start':
      return (
        <h4 class="turn-divider" data-testid="turn-divider">
          Turn {e.turn}
        </h4>
      );
    case 'turn/end':
      return (
        <p class={`turn-end ${e.reason === 'completed' ? '' : 'warn'}`} data-testid="turn-end">
          Turn {e.turn} ended: {e.reason}
          {e.error !== undefined ? ` (${e.error.code}: ${e.error.message})` : ''}
        </p>
      );
    case 'compact/end':
      return (
        <div class="compaction" role="separator" aria-label="Compaction" data-testid="compaction">
          <span>{compactionLine(e.compactionId, props.all)}</span>
        </div>
      );
    case 'compact/start':
      // Shown at its end; until then, here.
      return props.all.some((x) => x.type === 'compact/end' && x.compactionId === e.compactionId) ? null : (
        <div class="compaction" role="separator" aria-label="Compaction" data-testid="compaction">
          <span>{compactionLine(e.compactionId, props.all)}</span>
        </div>
      );
    case 'session/start':
      if (e.delegation !== undefined)
        return (
          <p class="origin-note">
            Subagent of{' '}
            <a href={routeHash({ sessionId: e.delegation.parentSessionId, step: null })}>
              {e.delegation.parentSessionId}
            </a>{' '}
            (call {e.delegation.callId})
          </p>
        );
      if (e.parent !== undefined)
        return (
          <p class="origin-note">
            Forked from <a href={routeHash({ sessionId: e.parent.sessionId, step: null })}>{e.parent.sessionId}</a> (its
            first {e.parent.seedLength} events)
          </p>
        );
      return null;
    default:
      return null;
  }
}

export interface ConversationProps {
  readonly sessionId: string;
  readonly timeline: Timeline;
  readonly events: readonly SessionEvent[];
  readonly raw: boolean;
  readonly focused: string | null;
  readonly open: StepRef | null;
  readonly onToggleRequest: (step: StepRef) => void;
  readonly onFocus: (step: StepRef) => void;
  readonly register: (key: string, element: HTMLElement | null) => void;
  readonly request: (step: StepRef) => JSX.Element;
  /** The step streaming its answer now, if any. */
  readonly live: LiveStep | null;
  readonly onForked: (sessionId: string) => void;
}

/** Where a fork may start after each ended turn: the seq right after its `turn/end`. */
function forkPoints(events: readonly SessionEvent[]): Map<number, number> {
  const points = new Map<number, number>();
  for (const e of events) if (e.type === 'turn/end') points.set(e.turn, e.seq + 1);
  return points;
}

export function ConversationView(props: ConversationProps) {
  const blocks = conversationBlocks(props.timeline, props.events);
  const forks = forkPoints(props.events);
  const lastStep = new Map(props.timeline.turns.map((t) => [t.turn, t.steps.at(-1)?.step]));
  const live = props.live;
  const liveHasCard = live !== null && blocks.some((b) => b.kind === 'step' && stepKey(b.step) === stepKey(live));
  return (
    <div class="conversation">
      {blocks.map((b) => {
        if (b.kind === 'event') {
          return (
            <Fragment key={`e${b.seq}`}>
              <LooseEvent event={b.event} all={props.events} />
              {props.raw && (
                <ul class="loose">
                  <EventLine event={b.event} />
                </ul>
              )}
            </Fragment>
          );
        }
        const ref = { turn: b.step.turn, step: b.step.step };
        const key = stepKey(ref);
        const isOpen = props.open !== null && stepKey(props.open) === key;
        return (
          <StepCard
            key={`s${key}`}
            sessionId={props.sessionId}
            step={b.step}
            events={b.events}
            raw={props.raw}
            focused={props.focused === key}
            onToggleRequest={() => props.onToggleRequest(ref)}
            onFocus={() => props.onFocus(ref)}
            register={(el) => props.register(key, el)}
            live={live !== null && stepKey(live) === key ? live : null}
            forkAt={lastStep.get(ref.turn) === ref.step ? (forks.get(ref.turn) ?? null) : null}
            onForked={props.onForked}
          >
            {isOpen ? props.request(ref) : null}
          </StepCard>
        );
      })}
      {/* Streaming before its step is in the timeline: at the end, where it will stand. */}
      {live !== null && !liveHasCard && <LiveAnswer step={live} />}
    </div>
  );
}
