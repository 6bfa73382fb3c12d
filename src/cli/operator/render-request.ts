// The human form of a re-derived wire body (`dh show --step`, `dh replay`): the knobs on one line, the
// tool names, then every message in full, in order, with its index and role.
import type { DerivedRequest } from '../../audit/derive-sent-requests.js';

interface WireMessage {
  role?: string;
  content?: unknown;
  reasoning_content?: string;
  tool_call_id?: string;
  tool_calls?: { id?: string; function?: { name?: string; arguments?: string } }[];
}

/** The heading of one derived request: step, seq, model, size, and whether the digest matches. */
export function requestHeading(step: DerivedRequest): string {
  const where =
    step.kind === 'step'
      ? `step ${step.id} (request/sent at seq ${step.sentSeq})`
      : `compaction ${step.id.slice('compact:'.length)} (summary request at seq ${step.sentSeq})`;
  if (step.error !== null || !step.wire || !step.request) return `${where}: CANNOT BE DERIVED: ${step.error ?? ''}`;
  const verdict = step.digestOk
    ? `digest ${step.wire.digest} matches the log`
    : `DIGEST MISMATCH: derived ${step.wire.digest}, the log recorded ${step.recordedDigest}`;
  return (
    `${where}: ${step.request.config.provider}/${step.request.config.model}, ` +
    `${step.request.messages.length + (step.request.system !== undefined ? 1 : 0)} message(s), ${step.wire.bytes} bytes; ${verdict}`
  );
}

/**
 * Renders a wire body. Messages before `fromMessage` are summarized in one line (replay shows only
 * what a prefix-stable request adds to the previous one).
 */
export function renderWireBody(body: string, fromMessage = 0): string {
  const parsed = JSON.parse(body) as Record<string, unknown>;
  const lines: string[] = [];
  const knobs = Object.entries(parsed)
    .filter(([key]) => key !== 'messages' && key !== 'tools')
    .map(([key, value]) => `${key}=${JSON.stringify(value)}`);
  lines.push(`body: ${knobs.join(' ')}`);
  const tools = Array.isArray(parsed.tools) ? (parsed.tools as { function?: { name?: string } }[]) : [];
  if (tools.length > 0) lines.push(`tools: ${tools.map((t) => t.function?.name ?? '?').join(', ')}`);
  const messages = Array.isArray(parsed.messages) ? (parsed.messages as WireMessage[]) : [];
  if (fromMessage > 0 && fromMessage <= messages.length) {
    lines.push(`[messages 0..${fromMessage - 1}: as in the previous request]`);
  }
  messages.forEach((message, index) => {
    if (index < fromMessage) return;
    lines.push(`── [${index}] ${messageLabel(message)}`);
    if (message.reasoning_content !== undefined && message.reasoning_content !== '') {
      lines.push(`(reasoning) ${message.reasoning_content}`);
    }
    const text = contentOf(message.content);
    if (text !== '') lines.push(text);
    for (const call of message.tool_calls ?? []) {
      lines.push(`→ ${call.function?.name ?? '?'}(${call.id ?? '?'}) ${call.function?.arguments ?? ''}`);
    }
  });
  return `${lines.join('\n')}\n`;
}

function messageLabel(message: WireMessage): string {
  if (message.role === 'tool') return `tool result for ${message.tool_call_id ?? '?'}`;
  return message.role ?? '?';
}

function contentOf(content: unknown): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return JSON.stringify(content);
  return (content as { type?: string; text?: string; image_url?: { url?: string } }[])
    .map((part) =>
      part.type === 'text'
        ? (part.text ?? '')
        : `[${part.type ?? 'part'} ${(part.image_url?.url ?? '').slice(0, 40)}…]`,
    )
    .join('\n');
}
