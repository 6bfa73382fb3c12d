// What a session's log adds up to and what its workflow says (status from the `state` query), where it came
// from and the subagents it started (as links), and the messages waiting in its queues.
import type { SessionDetail, Timeline } from '../../src/console/console-api.js';
import { grouped, percent, usd } from './format.js';
import { routeHash } from './hash-route.js';

const link = (sessionId: string) => routeHash({ sessionId, step: null });

export function SessionFacts(props: { detail: SessionDetail; timeline: Timeline | null }) {
  const d = props.detail;
  const priced = (props.timeline?.costByModel ?? []).filter((m) => m.usd !== null);
  return (
    <dl class="facts">
      <dt>Status</dt>
      <dd data-testid="session-status">{d.state?.status ?? d.stateUnavailable ?? 'unknown'}</dd>
      <dt>Turns</dt>
      <dd>{d.turns}</dd>
      <dt>Head</dt>
      <dd>{d.head}</dd>
      <dt>Tokens in / cached / out</dt>
      <dd>
        {grouped(d.usage.inputUncached)} / {grouped(d.usage.cacheRead)} / {grouped(d.usage.output)}
      </dd>
      <dt>Cache read</dt>
      <dd>{percent(d.cacheReadShare)}</dd>
      {priced.length > 0 && (
        <>
          <dt>Cost</dt>
          <dd>{usd(priced.reduce((sum, m) => sum + (m.usd ?? 0), 0))}</dd>
        </>
      )}
      {d.parentSessionId !== null && (
        <>
          <dt>Parent</dt>
          <dd>
            <a href={link(d.parentSessionId)}>{d.parentSessionId}</a>
          </dd>
        </>
      )}
      {d.children.length > 0 && (
        <>
          <dt>Subagents</dt>
          <dd class="children">
            {d.children.map((c) => (
              <span key={c.sessionId}>
                <a href={link(c.sessionId)}>{c.sessionId}</a> ({c.ended}){' '}
              </span>
            ))}
          </dd>
        </>
      )}
    </dl>
  );
}

export function QueuedMessages(props: { detail: SessionDetail }) {
  if (props.detail.queued.length === 0) return null;
  return (
    <section aria-label="Queued messages" class="queued">
      <h3>Queued</h3>
      <ul>
        {props.detail.queued.map((m) => (
          <li key={m.messageId} data-testid={`queued-${m.messageId}`}>
            <strong>{m.origin}</strong>
            {m.source !== null ? ` (${m.source})` : ''} → {m.target === 'next-step' ? 'next step' : 'next turn'}
            {m.downgraded ? ' (moved to the next turn by an interrupt)' : ''}: {m.preview}
          </li>
        ))}
      </ul>
    </section>
  );
}
