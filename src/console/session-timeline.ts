// The timeline of a session's log for the web console: turns → model steps with usage, latency, tool
// calls and header changes. Pure over the events, so the same log always draws the same timeline.
import type { SessionEvent } from '../core/index.js';
import type { Timeline, TimelineStep, TimelineTurn } from './console-api.js';

interface OpenStep {
  turn: number;
  step: number;
  fromSeq: number;
  toSeq: number;
  startedAt: number;
  requestDigest: string | null;
  usage: TimelineStep['usage'];
  latencyMs: number | null;
  finishReason: string | null;
  toolCalls: { callId: string; name: string; status: string | null }[];
  headerChanged: boolean;
}

export function sessionTimeline(sessionId: string, events: readonly SessionEvent[]): Timeline {
  const turns: { turn: number; ended: string | null; steps: OpenStep[] }[] = [];
  const head = events.length === 0 ? 0 : (events[events.length - 1]?.seq ?? -1) + 1;
  // A header logged for (turn, step) marks that step; the session's first header is no change.
  const headerSteps = new Set<string>();
  let headers = 0;
  let current: OpenStep | null = null;
  const turnOf = (turn: number): { turn: number; ended: string | null; steps: OpenStep[] } => {
    let found = turns.find((t) => t.turn === turn);
    if (!found) {
      found = { turn, ended: null, steps: [] };
      turns.push(found);
    }
    return found;
  };
  for (const event of events) {
    if (current) current.toSeq = event.seq;
    switch (event.type) {
      case 'turn/start':
        turnOf(event.turn);
        break;
      case 'turn/end':
        turnOf(event.turn).ended = event.reason;
        break;
      case 'request/header':
        if (headers++ > 0) headerSteps.add(`${event.turn}.${event.step}`);
        break;
      case 'step/start':
        current = {
          turn: event.turn,
          step: event.step,
          fromSeq: event.seq,
          toSeq: event.seq,
          startedAt: event.at,
          requestDigest: null,
          usage: null,
          latencyMs: null,
          finishReason: null,
          toolCalls: [],
          headerChanged: headerSteps.has(`${event.turn}.${event.step}`),
        };
        turnOf(event.turn).steps.push(current);
        break;
      case 'request/sent':
        if (current?.turn === event.turn && current.step === event.step) current.requestDigest = event.digest;
        break;
      case 'assistant/message':
        if (current?.turn === event.turn && current.step === event.step) {
          current.usage = event.usage ?? null;
          current.latencyMs = event.at - current.startedAt;
          current.finishReason = event.finishReason;
          current.toolCalls = event.toolCalls.map((c) => ({ callId: c.id, name: c.name, status: null }));
        }
        break;
      case 'tool/result': {
        const call = current?.toolCalls.find((c) => c.callId === event.callId);
        if (call) call.status = event.status;
        break;
      }
      case 'step/end':
        if (current?.turn === event.turn && current.step === event.step) current = null;
        break;
      default:
        break;
    }
    // A header is logged before its step starts; a step already open learns of it here.
    if (event.type === 'request/header' && current?.turn === event.turn && current.step === event.step)
      current.headerChanged = headers > 1;
  }
  return {
    sessionId,
    head,
    turns: turns.map((t): TimelineTurn => ({
      turn: t.turn,
      ended: t.ended,
      steps: t.steps.map(({ startedAt: _startedAt, ...step }): TimelineStep => step),
    })),
  };
}
