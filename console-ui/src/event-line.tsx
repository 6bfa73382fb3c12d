// One log event as a line of the timeline: what it says, in a few words. A tool policy's deny is marked
// like an error (class `bad`), so a refused call stands out among the allowed ones.
import type { SessionEvent } from '../../src/core/index.js';
import { clip } from './format.js';

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((p: { text?: unknown }) => (typeof p.text === 'string' ? p.text : '[part]')).join(' ');
  return JSON.stringify(content);
}

export function describeEvent(e: SessionEvent): string {
  const r = e as Record<string, unknown> & SessionEvent;
  switch (e.type) {
    case 'user/message':
      return `${String(r.origin)}: ${clip(contentText(r.content))}`;
    case 'assistant/message': {
      const calls = (r.toolCalls as { name: string }[]).map((c) => c.name).join(', ');
      return `${clip(typeof r.content === 'string' ? r.content : '')}${calls === '' ? '' : ` → calls ${calls}`}`;
    }
    case 'tool/start':
      return `${String(r.name)} (${String(r.callId)})`;
    case 'tool/result':
      return `${String(r.name)} ${String(r.status)}: ${clip(String(r.output))}`;
    case 'inbox/enqueue':
    case 'inbox/claim':
    case 'inbox/downgrade':
    case 'inbox/discard':
      return clip(
        JSON.stringify(
          Object.fromEntries(Object.entries(r).filter(([k]) => !['seq', 'at', 'key', 'type'].includes(k))),
        ),
      );
    case 'turn/end':
      return String(r.reason);
    case 'policy/verdict': {
      const by =
        e.by === 'evaluator'
          ? `evaluator ${e.evaluator ?? '?'}`
          : e.rule !== undefined
            ? `${e.by === 'session-rule' ? 'session rule' : 'rule'} ${e.rule}`
            : e.by;
      return `${e.outcome} ${e.name} (${e.callId}) by ${by}${e.reason !== undefined ? `: ${clip(e.reason)}` : ''}`;
    }
    case 'policy/rule': {
      const rule = e.rule;
      return (
        `remembered for this session: ${rule.outcome} ${[rule.tool].flat().join(', ')}` +
        `${rule.when !== undefined ? ' (these arguments)' : ''}${e.by !== undefined ? ` by ${e.by}` : ''}`
      );
    }
    default:
      return clip(
        JSON.stringify(
          Object.fromEntries(Object.entries(r).filter(([k]) => !['seq', 'at', 'key', 'type'].includes(k))),
        ),
        200,
      );
  }
}

export function EventLine(props: { event: SessionEvent }) {
  const e = props.event;
  return (
    <li
      class={`event ${e.type.replace('/', '-')}${e.type === 'policy/verdict' && e.outcome === 'deny' ? ' bad' : ''}`}
      data-type={e.type}
    >
      <span class="seq">#{e.seq}</span> <span class="type">{e.type}</span> <span>{describeEvent(e)}</span>
    </li>
  );
}
