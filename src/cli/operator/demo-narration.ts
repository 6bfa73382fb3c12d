// What `dh demo` says about its session's log once it closed: the moments worth pointing at, and the seq
// its fork hint branches at.
import type { SessionEvent } from '../../core/index.js';

/** What the log recorded about the demo's interesting moments. */
export function narrateDemo(events: readonly SessionEvent[]): string {
  const lines = ['what the log recorded:'];
  const tool = events.find((e) => e.type === 'tool/result');
  if (tool?.type === 'tool/result')
    lines.push(`  seq ${tool.seq}: ${tool.name} ${tool.status} at step ${tool.turn}.${tool.step}`);
  for (const e of events) {
    if (e.type === 'user/message' && (e.origin === 'steer' || e.origin === 'inject')) {
      lines.push(`  seq ${e.seq}: the ${e.origin} entered step ${e.turn}.${e.step}`);
    }
    if (e.type === 'assistant/message' && e.interrupted) {
      lines.push(
        `  seq ${e.seq}: step ${e.turn}.${e.step}'s partial answer, logged as interrupted (${(e.content ?? '').length} chars)`,
      );
    }
    if (e.type === 'turn/end' && e.reason !== 'completed')
      lines.push(`  seq ${e.seq}: turn ${e.turn} ended ${e.reason}`);
  }
  const crashed = events.filter((e) => e.type === 'request/sent' && e.turn === 5);
  const answered = events.filter((e) => e.type === 'assistant/message' && e.turn === 5);
  lines.push(
    `  turn 5 (the crash): ${crashed.length} request/sent, ${answered.length} answer logged — the retried step reused the logged request`,
  );
  return lines.join('\n');
}

/** The seq right after turn 2 ended: a valid fork boundary. */
export function demoForkPoint(events: readonly SessionEvent[]): number | null {
  const end = events.find((e) => e.type === 'turn/end' && e.turn === 2);
  return end ? end.seq + 1 : null;
}
