// Human one-liners for log events (`dh log`): seq, time, type, and what the event says, content cut
// to one short line. The JSONL form is the events themselves.
import { usageTotal, type SessionEvent, type UserContent, type Usage } from '../../core/index.js';

const SNIPPET_CHARS = 80;

/** `  12 2026-05-01 10:00:02 user/message       1.1 followup: "Hello"`. */
export function eventLine(event: SessionEvent): string {
  const time = new Date(event.at).toISOString().replace('T', ' ').slice(0, 19);
  return `${String(event.seq).padStart(5)} ${time} ${event.type.padEnd(18)} ${describeEvent(event)}`;
}

export function describeEvent(event: SessionEvent): string {
  switch (event.type) {
    case 'session/start':
      return (
        `session ${event.sessionId} (format v${event.formatVersion})` +
        (event.agent ? `, agent ${event.agent.name}@${event.agent.version}` : '') +
        (event.parent ? `, forked from ${event.parent.sessionId} (seed: seqs 0..${event.parent.seedLength - 1})` : '') +
        (event.delegation
          ? `, subagent of ${event.delegation.parentSessionId} (call ${event.delegation.callId}, depth ${event.delegation.depth})`
          : '')
      );
    case 'session/seed-end':
      return 'end of the fork seed';
    case 'request/header': {
      const c = event.header.config;
      const tools = event.header.tools?.length ?? 0;
      const agent = event.header.agent ? ` (agent ${event.header.agent.name}@${event.header.agent.version})` : '';
      return `${event.turn}.${event.step} ${event.reason}: ${c.provider}/${c.model}${tools > 0 ? `, ${tools} tool(s)` : ''}${agent}`;
    }
    case 'agent/overrides': {
      const set = Object.keys(event.overrides);
      return `${set.length > 0 ? set.join(', ') : 'cleared'}${event.source !== undefined ? ` by ${event.source}` : ''}`;
    }
    case 'inbox/enqueue':
      return (
        `${event.origin} ${event.messageId} → ${event.target}${event.wakeup ? '' : ' (no wake)'}` +
        `${event.source !== undefined ? ` from ${event.source}` : ''}: ${snippet(contentText(event.content))}`
      );
    case 'inbox/claim':
      return `${event.turn}.${event.step} claims ${event.messageIds.join(', ')}`;
    case 'inbox/discard':
      return `${event.messageIds.join(', ')}: ${event.reason}`;
    case 'inbox/downgrade':
      return `${event.messageId}: requested ${event.requested}, queued for the next turn`;
    case 'turn/start':
      return `turn ${event.turn}`;
    case 'turn/end':
      return `turn ${event.turn}: ${event.reason}${event.error ? ` (${event.error.code}: ${oneLine(event.error.message)})` : ''}`;
    case 'step/start':
      return `${event.turn}.${event.step}`;
    case 'step/end':
      return `${event.turn}.${event.step}${event.error ? ` (${event.error.code}: ${oneLine(event.error.message)})` : ''}`;
    case 'user/message':
      return (
        `${event.turn}.${event.step} ${event.origin}${event.source !== undefined ? ` from ${event.source}` : ''}: ` +
        snippet(contentText(event.content))
      );
    case 'assistant/message': {
      const parts = [`${event.turn}.${event.step}`];
      if (event.content !== null && event.content !== '') parts.push(snippet(event.content));
      if (event.toolCalls.length > 0) parts.push(`→ ${event.toolCalls.map((c) => `${c.name}(${c.id})`).join(', ')}`);
      if (event.interrupted) parts.push('[interrupted]');
      if (event.usage) parts.push(`[${usageText(event.usage)}]`);
      return parts.join(' ');
    }
    case 'tool/start':
      return `${event.turn}.${event.step} ${event.name} ${event.callId}${event.child !== undefined ? ` → subagent ${event.child}` : ''}`;
    case 'tool/result':
      return (
        `${event.turn}.${event.step} ${event.name} ${event.callId} ${event.status}` +
        (event.child
          ? ` ← subagent ${event.child.sessionId} ${event.child.reason}, ${usageTotal(event.child.usage)} tokens`
          : '') +
        `: ${snippet(event.output)}`
      );
    case 'request/sent':
      return `${event.turn}.${event.step} ${event.bytes} bytes ${event.digest.slice(0, 19)}…`;
    case 'approval/request':
      return `${event.turn}.${event.step} ${event.name} ${event.callId}: ${oneLine(event.reason)}`;
    case 'approval/decision':
      return (
        `${event.turn}.${event.step} ${event.callId}: ${event.decision}` +
        `${event.by !== undefined ? ` by ${event.by}` : ''}${event.reason !== undefined ? ` (${oneLine(event.reason)})` : ''}`
      );
    case 'policy/verdict': {
      const by =
        event.by === 'evaluator'
          ? `evaluator ${event.evaluator ?? '?'}`
          : event.rule !== undefined
            ? `${event.by} ${event.rule}`
            : event.by;
      return (
        `${event.turn}.${event.step} ${event.name} ${event.callId}: ${event.outcome} by ${by} (${event.version})` +
        `${event.reason !== undefined ? `: ${oneLine(event.reason)}` : ''}${event.escalated !== undefined ? ` [escalated: ${oneLine(event.escalated)}]` : ''}`
      );
    }
    case 'policy/rule':
      return `${event.turn}.${event.step} ${event.callId}: remembers ${event.rule.id}: ${event.rule.outcome} ${[event.rule.tool].flat().join(',')}${event.rule.when !== undefined ? ' (these arguments)' : ''}${event.by !== undefined ? ` by ${event.by}` : ''}`;
    case 'compact/start':
      return `${event.compactionId} (${event.trigger})`;
    case 'compact/summary':
      return (
        `${event.compactionId} ${event.provider}/${event.model}: messages ${event.range.start}..${event.range.end}, ` +
        `${event.tokensBefore} → ${event.tokensAfter} tokens`
      );
    case 'compact/refused':
      return `${event.compactionId} ${event.provider}/${event.model}: ${event.error.code}: ${oneLine(event.error.message)}`;
    case 'compact/end':
      return `${event.compactionId}: ${event.outcome}`;
    case 'surface/replace':
      return `${event.replaceId}: messages ${event.range.start}..${event.range.end} → ${event.messages.length} message(s)`;
  }
}

export function usageText(usage: Usage): string {
  return `in ${usage.inputUncached} + ${usage.cacheRead} cached, out ${usage.output}${usage.reasoning > 0 ? ` + ${usage.reasoning} reasoning` : ''}`;
}

/** The text of user content; images show as `[image <name or id>]`. */
export function contentText(content: UserContent): string {
  if (typeof content === 'string') return content;
  return content
    .map((part) =>
      part.type === 'text' ? part.text : `[image ${part.attachment.name ?? part.attachment.id.slice(0, 19)}]`,
    )
    .join(' ');
}

/** A quoted one-line excerpt. */
export function snippet(text: string, max = SNIPPET_CHARS): string {
  const line = oneLine(text);
  return JSON.stringify(line.length > max ? `${line.slice(0, max - 1)}…` : line);
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
