// One model step as a card of the conversation: how it stands (its state from the timeline, never guessed),
// model, tokens, cost and latency, a permalink; then what entered it (user messages, injected context marked
// as such), the answer as markdown (while it streams, the live text in its place), and its tool calls as cards;
// the last step of an ended turn can fork the session there. Raw events show only when asked for.
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { TimelineStep } from '../../src/console/console-api.js';
import type { EventOf, SessionEvent } from '../../src/core/index.js';
import { EventLine } from './event-line.js';
import { ForkButton } from './fork-button.js';
import { duration, grouped, price } from './format.js';
import { routeHash } from './hash-route.js';
import { LiveAnswer } from './live-answer.js';
import type { LiveStep } from './live-resume.js';
import { MarkdownView } from './markdown-view.js';
import { wireText } from './request-messages.js';
import { ToolCard } from './tool-card.js';

const ORIGIN_LABEL: Record<string, string> = {
  followup: 'user · followup',
  steer: 'user · steer',
  inject: 'context · inject',
  send: 'user · send',
};

function UserMessage(props: { event: EventOf<'user/message'> }) {
  const e = props.event;
  return (
    <div class={`msg user origin-${e.origin}`} data-origin={e.origin} data-testid="user-message">
      <div class="who">
        <span class={`badge origin origin-${e.origin}`}>{ORIGIN_LABEL[e.origin] ?? e.origin}</span>
        {e.source !== undefined && <span class="muted"> from {e.source}</span>}
      </div>
      <div class="text">{wireText(e.content)}</div>
    </div>
  );
}

/** The answer: its reasoning folded, its text as markdown, then its tool calls as cards. */
function AssistantAnswer(props: { event: EventOf<'assistant/message'>; children: JSX.Element[] }) {
  const e = props.event;
  const text = e.content ?? '';
  const calls = e.toolCalls.length;
  return (
    <div class="msg assistant" data-testid="assistant-message">
      <div class="who">
        <span class="badge origin">assistant</span>
        {text === '' && calls > 0 && <span class="muted">calls {calls === 1 ? 'a tool' : `${calls} tools`}</span>}
        {text === '' && calls === 0 && <span class="muted">no text</span>}
        {e.interrupted === true && <span class="badge bad">cut by an interrupt</span>}
      </div>
      {e.reasoning !== undefined && e.reasoning !== '' && (
        <details>
          <summary>Reasoning</summary>
          <pre>{e.reasoning}</pre>
        </details>
      )}
      {text !== '' && <MarkdownView text={text} testId="answer-markdown" />}
      {text !== '' && <AnswerSource text={text} />}
      {props.children}
    </div>
  );
}

/** The answer exactly as logged, one click away from its rendering (drawn only when opened: no text twice). */
function AnswerSource(props: { text: string }) {
  const [shown, setShown] = useState(false);
  return (
    <details class="answer-source" onToggle={(e) => setShown(e.currentTarget.open)}>
      <summary>Answer as logged ({props.text.length} characters)</summary>
      {shown && <pre data-testid="step-answer">{props.text}</pre>}
    </details>
  );
}

function stepFacts(s: TimelineStep): string[] {
  const facts: string[] = [];
  if (s.model != null) facts.push(s.model);
  if (s.usage !== null)
    facts.push(
      `in ${grouped(s.usage.inputUncached)} + cached ${grouped(s.usage.cacheRead)}, out ${grouped(s.usage.output)}`,
    );
  if (s.cost != null) facts.push(price(s.cost.usd));
  else if (s.usage !== null) facts.push(price(null));
  if (s.latencyMs !== null) facts.push(duration(s.latencyMs));
  if (s.finishReason !== null) facts.push(`finish: ${s.finishReason}`);
  if (s.headerChanged) facts.push('header changed');
  return facts;
}

export interface StepCardProps {
  readonly sessionId: string;
  readonly step: TimelineStep;
  /** The events of this step (those naming its turn and step), in log order. */
  readonly events: readonly SessionEvent[];
  readonly raw: boolean;
  readonly focused: boolean;
  readonly onToggleRequest: () => void;
  readonly onFocus: () => void;
  readonly register: (element: HTMLElement | null) => void;
  /** The answer this step streams now (drawn until its logged answer is in). */
  readonly live?: LiveStep | null;
  /** Set on the last step of an ended turn: a fork there keeps the log's first `forkAt` events. */
  readonly forkAt?: number | null;
  readonly onForked?: (sessionId: string) => void;
  /** The request view, when this step's is open. */
  readonly children?: JSX.Element | null;
}

export function StepCard(props: StepCardProps) {
  const s = props.step;
  const ended = s.state !== 'running';
  const link = routeHash({ sessionId: props.sessionId, step: { turn: s.turn, step: s.step } });
  return (
    <article
      class={`step state-${s.state}${props.focused ? ' focused' : ''}`}
      aria-label={`Turn ${s.turn} step ${s.step}`}
      data-step={`${s.turn}.${s.step}`}
      tabIndex={-1}
      ref={props.register}
      onFocus={(e) => e.target === e.currentTarget && props.onFocus()}
    >
      <header class="step-head">
        <strong>
          Turn {s.turn} · step {s.step}
        </strong>{' '}
        <span class={`badge state state-${s.state}`} data-testid="step-state">
          {s.state}
        </span>{' '}
        <span class="muted">{stepFacts(s).join(' · ')}</span>{' '}
        <span class="step-tools">
          <a
            href={link}
            class="permalink"
            title="Link to this step"
            aria-label={`Link to turn ${s.turn} step ${s.step}`}
          >
            #
          </a>{' '}
          {s.requestDigest !== null && (
            <button
              type="button"
              aria-label={`Request of turn ${s.turn} step ${s.step}`}
              aria-expanded={props.children != null}
              onClick={props.onToggleRequest}
            >
              What the model saw
            </button>
          )}{' '}
          {props.forkAt != null && props.onForked !== undefined && (
            <ForkButton sessionId={props.sessionId} atSeq={props.forkAt} turn={s.turn} onForked={props.onForked} />
          )}
        </span>
      </header>
      {s.error != null && (
        <p class={s.state === 'failed' ? 'bad' : 'warn'} data-testid="step-error">
          {s.error.code}: {s.error.message}
        </p>
      )}
      <div class="step-body">
        {props.events.map((e) => {
          if (e.type === 'user/message') return <UserMessage key={e.seq} event={e} />;
          if (e.type !== 'assistant/message') return null;
          return (
            <AssistantAnswer key={e.seq} event={e}>
              {e.toolCalls.map((call) => (
                <ToolCard key={call.id} call={call} events={props.events} stepEnded={ended} />
              ))}
            </AssistantAnswer>
          );
        })}
        {props.live != null && !props.events.some((e) => e.type === 'assistant/message') && (
          <LiveAnswer step={props.live} />
        )}
      </div>
      {props.raw && <RawEvents events={props.events} />}
      {props.children}
    </article>
  );
}

/** The step's events as logged: a line each, and their JSON. */
export function RawEvents(props: { events: readonly SessionEvent[] }) {
  return (
    <div class="raw-events" data-testid="raw-events">
      <ul>
        {props.events.map((e) => (
          <EventLine key={e.seq} event={e} />
        ))}
      </ul>
      <pre class="raw-json">{props.events.map((e) => JSON.stringify(e)).join('\n')}</pre>
    </div>
  );
}
