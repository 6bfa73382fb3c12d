// A request's wire body drawn as the conversation the model received: each message with its role, its
// text, the tool calls it made or the call it answers. The ones appended since the previous step are shown
// whole and marked new; the shared prefix folds to a line each.
import { clip, plural } from './format.js';

interface WireToolCall {
  readonly id?: unknown;
  readonly function?: { readonly name?: unknown; readonly arguments?: unknown };
}
interface WireMessage {
  readonly role?: unknown;
  readonly content?: unknown;
  readonly tool_calls?: readonly WireToolCall[];
  readonly tool_call_id?: unknown;
  readonly reasoning_content?: unknown;
}

/** A message's content as text: strings as they are, content parts by their text (images as `[image]`). */
export function wireText(content: unknown): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((p: { type?: unknown; text?: unknown }) => (typeof p.text === 'string' ? p.text : `[${String(p.type)}]`))
      .join('\n');
  return JSON.stringify(content);
}

function prettyArguments(raw: unknown): string {
  if (typeof raw !== 'string') return JSON.stringify(raw);
  try {
    return JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    return raw;
  }
}

function oneLine(text: string, calls: readonly WireToolCall[]): string {
  const named = calls.map((c) => `→ ${String(c.function?.name)}`).join(' ');
  return [text.replace(/\s+/g, ' ').trim(), named].filter((part) => part !== '').join(' ') || '(empty)';
}

function MessageBody(props: { text: string; calls: readonly WireToolCall[] }) {
  return (
    <>
      {props.text !== '' && <pre class="wire-text">{props.text}</pre>}
      {props.calls.map((c, j) => (
        <div key={j} class="wire-call">
          → calls <code>{String(c.function?.name)}</code> <span class="muted">({String(c.id)})</span>
          <pre>{prettyArguments(c.function?.arguments)}</pre>
        </div>
      ))}
    </>
  );
}

export function RequestMessages(props: { body: unknown; appended: number | null }) {
  const body = props.body as { messages?: unknown; tools?: unknown; model?: unknown } | null;
  const messages = body?.messages;
  if (!Array.isArray(messages)) return null;
  // Counted from the end: the wire body carries the system prompt as a message the diff does not count.
  const firstNew = props.appended === null ? 0 : messages.length - props.appended;
  const tools = Array.isArray(body?.tools)
    ? (body.tools as { function?: { name?: unknown } }[]).map((t) => String(t.function?.name))
    : [];
  return (
    <>
      <p class="muted">
        Model <code>{String(body?.model)}</code> · {plural(messages.length, 'message')}
        {tools.length > 0 ? ` · tools: ${tools.join(', ')}` : ' · no tools'}
      </p>
      <ol class="messages" start={0} aria-label="Request messages">
        {(messages as WireMessage[]).map((m, i) => {
          const role = String(m.role);
          const isNew = i >= firstNew;
          // A first request has nothing to be new against: no marks then.
          const marked = isNew && props.appended !== null;
          const text = wireText(m.content);
          return (
            <li key={i} class={`wire-msg role-${role} ${marked ? 'appended' : isNew ? '' : 'shared'}`}>
              <div class="wire-head">
                <strong>{role}</strong>
                {marked && <span class="badge new">new</span>}
                {typeof m.tool_call_id === 'string' && <span class="muted"> answers {m.tool_call_id}</span>}
              </div>
              {typeof m.reasoning_content === 'string' && m.reasoning_content !== '' && (
                <details>
                  <summary>Reasoning</summary>
                  <pre>{m.reasoning_content}</pre>
                </details>
              )}
              {isNew ? (
                <MessageBody text={text} calls={m.tool_calls ?? []} />
              ) : (
                // Shared with the previous request: one line, the whole of it a click away.
                <details class="shared-body">
                  <summary title={clip(oneLine(text, m.tool_calls ?? []), 1000)}>
                    {clip(oneLine(text, m.tool_calls ?? []), 140)}
                  </summary>
                  <MessageBody text={text} calls={m.tool_calls ?? []} />
                </details>
              )}
            </li>
          );
        })}
      </ol>
    </>
  );
}
