// The timeline of a session's log for the web console: turns → model steps with their state, waterfall,
// usage, cost, tool calls and header changes, and the cost per model. Pure over the events, so the same
// log always draws the same timeline.
import type { SessionEvent } from '../core/index.js';
import type { Timeline, TimelineTurn } from './console-api.js';
import { costByModel } from './cost-by-model.js';
import { StepTracker } from './step-tracker.js';

export function sessionTimeline(sessionId: string, events: readonly SessionEvent[]): Timeline {
  const turns: { turn: number; ended: string | null; steps: StepTracker[] }[] = [];
  const head = events.length === 0 ? 0 : (events[events.length - 1]?.seq ?? -1) + 1;
  // A header logged for (turn, step) marks that step; the session's first header is no change.
  const headerSteps = new Set<string>();
  let headers = 0;
  let model: string | null = null;
  let current: StepTracker | null = null;
  const turnOf = (turn: number): { turn: number; ended: string | null; steps: StepTracker[] } => {
    let found = turns.find((t) => t.turn === turn);
    if (!found) {
      found = { turn, ended: null, steps: [] };
      turns.push(found);
    }
    return found;
  };
  for (const event of events) {
    current?.apply(event);
    switch (event.type) {
      case 'turn/start':
        turnOf(event.turn);
        break;
      case 'turn/end':
        turnOf(event.turn).ended = event.reason;
        break;
      case 'request/header':
        if (headers++ > 0) headerSteps.add(`${event.turn}.${event.step}`);
        model = event.header.config.model;
        // A header can be logged after its step started; a step already open learns of it here.
        if (current?.turn === event.turn && current.step === event.step) {
          current.headerChanged = headers > 1;
          current.model = model;
        }
        break;
      case 'step/start':
        current = new StepTracker(event, model, headerSteps.has(`${event.turn}.${event.step}`));
        turnOf(event.turn).steps.push(current);
        break;
      default:
        break;
    }
    if (current?.ended) current = null;
  }
  const steps = turns.flatMap((t) => t.steps);
  return {
    sessionId,
    head,
    turns: turns.map((t): TimelineTurn => ({ turn: t.turn, ended: t.ended, steps: t.steps.map((s) => s.view()) })),
    costByModel: costByModel(steps),
  };
}
