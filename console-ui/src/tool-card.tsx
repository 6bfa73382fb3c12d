// One tool call of a step as a card that folds: its name, how it ended (coloured), the policy's verdict and
// the approval asked and given (with who decided) marked on the closed card; opened, its arguments and result.
// A delegation call links to the subagent's session.
import type { EventOf, SessionEvent, ToolCall } from '../../src/core/index.js';
import { routeHash } from './hash-route.js';

/** The events of one call, in log order, picked out of its step's. */
export interface CallEvents {
  readonly verdict: EventOf<'policy/verdict'> | undefined;
  readonly asked: EventOf<'approval/request'> | undefined;
  readonly decided: EventOf<'approval/decision'> | undefined;
  readonly remembered: EventOf<'policy/rule'> | undefined;
  readonly started: EventOf<'tool/start'> | undefined;
  readonly result: EventOf<'tool/result'> | undefined;
}

export function callEvents(callId: string, events: readonly SessionEvent[]): CallEvents {
  const of = <T extends SessionEvent['type']>(type: T) =>
    events.find((e): e is EventOf<T> => e.type === type && 'callId' in e && e.callId === callId);
  return {
    verdict: of('policy/verdict'),
    asked: of('approval/request'),
    decided: of('approval/decision'),
    remembered: of('policy/rule'),
    started: of('tool/start'),
    result: of('tool/result'),
  };
}

function pretty(raw: string): string {
  try {
    return JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    return raw;
  }
}

/** How the call stands: its result's status, else what it waits for. */
function callStatus(c: CallEvents, stepEnded: boolean): string {
  if (c.result !== undefined) return c.result.status;
  if (c.asked !== undefined && c.decided === undefined) return stepEnded ? 'no decision' : 'waiting for approval';
  if (stepEnded) return 'no result';
  return c.started !== undefined ? 'running' : 'pending';
}

function verdictText(v: EventOf<'policy/verdict'>): string {
  const by =
    v.by === 'evaluator'
      ? `evaluator ${v.evaluator ?? '?'}`
      : v.rule !== undefined
        ? `${v.by === 'session-rule' ? 'session rule' : 'rule'} ${v.rule}`
        : v.by === 'default'
          ? 'no rule (default)'
          : v.by;
  return `policy: ${v.outcome} by ${by}`;
}

function decisionText(d: EventOf<'approval/decision'>): string {
  const word = d.decision === 'approve' ? 'approved' : d.decision === 'deny' ? 'denied' : 'timed out';
  return `${word}${d.by !== undefined ? ` by ${d.by}` : ''}`;
}

const RESULT_SHOWN = 4_000;

export function ToolCard(props: { call: ToolCall; events: readonly SessionEvent[]; stepEnded: boolean }) {
  const { call } = props;
  const c = callEvents(call.id, props.events);
  const status = callStatus(c, props.stepEnded);
  const child = c.started?.child ?? c.result?.child?.sessionId;
  const output = c.result?.output ?? null;
  return (
    <details
      class={`tool-card status-${status.replace(/ /g, '-')}`}
      role="group"
      aria-label={`Tool call ${call.name} (${call.id})`}
      data-testid="tool-card"
      // A call waiting for a decision is what the reader needs to see: open it.
      open={c.asked !== undefined && c.decided === undefined && !props.stepEnded}
    >
      <summary>
        <span class="tool-name">{call.name}</span> <span class="muted">{call.id}</span>{' '}
        <span class="badge status" data-testid="tool-status">
          {status}
        </span>
        {c.verdict !== undefined && (
          <span class={`badge verdict verdict-${c.verdict.outcome}`} data-testid="policy-verdict">
            {verdictText(c.verdict)}
          </span>
        )}
        {c.asked !== undefined && (
          <span class="badge approval" data-testid="approval-marker">
            approval asked{c.decided !== undefined ? ` · ${decisionText(c.decided)}` : ''}
          </span>
        )}
        {child !== undefined && (
          <a class="badge subagent" href={routeHash({ sessionId: child, step: null })} data-testid="subagent-link">
            subagent {child}
          </a>
        )}
      </summary>
      <div class="tool-body">
        <h5>Arguments</h5>
        <pre>{pretty(call.arguments)}</pre>
        {c.verdict !== undefined && (
          <p class={c.verdict.outcome === 'deny' ? 'bad' : ''}>
            {verdictText(c.verdict)} (policy {c.verdict.version})
            {c.verdict.reason !== undefined ? `: ${c.verdict.reason}` : ''}
            {c.verdict.escalated !== undefined ? ` — escalated: ${c.verdict.escalated}` : ''}
          </p>
        )}
        {c.asked !== undefined && <p>Approval asked: {c.asked.reason}</p>}
        {c.decided !== undefined && (
          <p class={c.decided.decision === 'approve' ? 'ok' : 'bad'}>
            {decisionText(c.decided)}
            {c.decided.reason !== undefined ? `: ${c.decided.reason}` : ''}
          </p>
        )}
        {c.remembered !== undefined && (
          <p>
            Remembered for this session: {c.remembered.rule.outcome} {[c.remembered.rule.tool].flat().join(', ')}
            {c.remembered.rule.when !== undefined ? ' (these arguments)' : ''}
          </p>
        )}
        {c.result?.child !== undefined && (
          <p>
            Subagent ended {c.result.child.reason}, {c.result.child.usage.output} output tokens
          </p>
        )}
        {output !== null && (
          <>
            <h5>Result</h5>
            <pre data-testid="tool-output">
              {output.length > RESULT_SHOWN ? `${output.slice(0, RESULT_SHOWN)}…` : output}
            </pre>
          </>
        )}
      </div>
    </details>
  );
}
