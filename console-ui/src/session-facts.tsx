// What a session's log adds up to and what its workflow says (status from the `state` query), where it came
// from and the subagents it started (as links), and the messages waiting in its queues.
import type { SessionDetail, Timeline } from '../../src/console/console-api.js';
import { grouped, percent, plural, price } from './format.js';
import { routeHash } from './hash-route.js';
import { StatusBadge } from './status-badge.js';

const link = (sessionId: string) => routeHash({ sessionId, step: null });

export function SessionFacts(props: { detail: SessionDetail; timeline: Timeline | null }) {
  const d = props.detail;
  const models = props.timeline?.costByModel ?? [];
  const priced = models.filter((m) => m.usd !== null);
  const unpriced = models.reduce((n, m) => n + m.unpricedSteps, 0);
  return (
    <dl class="facts">
      <dt>Status</dt>
      <dd>
        {d.state !== null ? (
          <StatusBadge status={d.state.status} testId="session-status" />
        ) : (
          <span data-testid="session-status">{d.stateUnavailable ?? 'unknown'}</span>
        )}
      </dd>
      <dt>Turns</dt>
      <dd>{d.turns}</dd>
      <dt>Log</dt>
      <dd title="the events in the session's log">{plural(d.head, 'event')}</dd>
      <dt>Tokens in / cached / out</dt>
      <dd>
        {grouped(d.usage.inputUncached)} / {grouped(d.usage.cacheRead)} / {grouped(d.usage.output)}
      </dd>
      <dt>Cache read</dt>
      <dd>{percent(d.cacheReadShare)}</dd>
      {(priced.length > 0 || unpriced > 0) && (
        <>
          <dt>Cost</dt>
          <dd>
            {price(priced.length > 0 ? priced.reduce((sum, m) => sum + (m.usd ?? 0), 0) : null)}
            {priced.length > 0 && unpriced > 0 ? ` (and ${plural(unpriced, 'step')} with no price)` : ''}
          </dd>
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
