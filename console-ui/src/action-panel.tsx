// What an operator can do to a session: send a followup / steer / inject, interrupt, approve or deny the
// waiting tool call (shown by its short id; "Approve & remember" approves every later call of its tool in the
// session too), compact. (A fork starts from the conversation: each ended turn has its button.) Each error is
// shown exactly as the API returned it.
import { useState } from 'preact/hooks';
import type { Accepted, ApprovalRequest, MessageRequest, SessionDetail } from '../../src/console/console-api.js';
import { CONSOLE_ROUTES } from '../../src/console/console-api.js';
import { apiPost, describeError, routePath } from './api-client.js';

/** The decisions on a waiting call; "remember" adds a session rule that approves its tool's later calls. */
const APPROVAL_BUTTONS: readonly { label: string; what: string; body: ApprovalRequest }[] = [
  { label: 'Approve', what: 'approve', body: { decision: 'approve' } },
  { label: 'Deny', what: 'deny', body: { decision: 'deny' } },
  { label: 'Approve & remember', what: 'approve and remember', body: { decision: 'approve', remember: 'tool' } },
];

export function ActionPanel(props: { detail: SessionDetail; onDone: () => void }) {
  const id = props.detail.sessionId;
  const [kind, setKind] = useState<MessageRequest['kind']>('followup');
  const [content, setContent] = useState('');
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const pending = props.detail.state?.pendingApproval ?? null;

  const act = (what: string, run: () => Promise<unknown>, after?: () => void): void => {
    setResult(null);
    run().then(
      (value) => {
        const warning = (value as Partial<Accepted> | null)?.warning;
        setResult(
          warning !== undefined
            ? { ok: false, text: `${what}: accepted, but ${warning.message}` }
            : { ok: true, text: `${what}: accepted` },
        );
        after?.();
        props.onDone();
      },
      (e: unknown) => setResult({ ok: false, text: describeError(e) }),
    );
  };
  const post = <T,>(route: string, body: unknown, extra: Record<string, string> = {}) =>
    apiPost<T>(routePath(route, { id, ...extra }), body);

  return (
    <section aria-label="Actions" class="actions">
      <h3>Act</h3>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const body: MessageRequest = { kind, content };
          act(
            kind,
            () => post<Accepted>(CONSOLE_ROUTES.messages, body),
            () => setContent(''),
          );
        }}
      >
        <label>
          Kind{' '}
          <select value={kind} onChange={(e) => setKind(e.currentTarget.value as MessageRequest['kind'])}>
            <option value="followup">followup</option>
            <option value="steer">steer</option>
            <option value="inject">inject</option>
          </select>
        </label>{' '}
        <label>
          Message <textarea rows={2} value={content} onInput={(e) => setContent(e.currentTarget.value)} />
        </label>{' '}
        <button type="submit">Send</button>
      </form>
      <p>
        <button type="button" onClick={() => act('interrupt', () => post<Accepted>(CONSOLE_ROUTES.interrupt, {}))}>
          Interrupt
        </button>{' '}
        <button type="button" onClick={() => act('compact', () => post<Accepted>(CONSOLE_ROUTES.compact, {}))}>
          Compact
        </button>
      </p>
      {pending !== null && (
        <div role="group" aria-label="Pending approval" class="approval">
          <p>
            {/* The short id is what `dh approve` takes too; older workers do not send one. */}
            {pending.shortId !== undefined && (
              <code class="short-id" title={`call ${pending.callId}`}>
                {pending.shortId}
              </code>
            )}{' '}
            Waiting for approval: <strong>{pending.name}</strong>
            {pending.shortId === undefined && ` (${pending.callId})`} — {pending.reason}
          </p>
          {APPROVAL_BUTTONS.map(({ label, what, body }) => (
            <button
              key={label}
              type="button"
              title={body.remember === 'tool' ? `approve every call of ${pending.name} in this session` : undefined}
              onClick={() => act(what, () => post<Accepted>(CONSOLE_ROUTES.approve, body, { callId: pending.callId }))}
            >
              {label}
            </button>
          ))}
        </div>
      )}
      {result !== null && (
        <p role={result.ok ? 'status' : 'alert'} aria-label="Action result" class={result.ok ? 'ok' : 'bad'}>
          {result.text}
        </p>
      )}
    </section>
  );
}
