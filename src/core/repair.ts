// Crash repair (pure): a log whose last turn never ended is closed by appending what is missing,
// never by truncating. Started tools get `interrupted` (outcome unknown), unstarted ones `skipped`.
import type { EventDraft } from './events.js';
import type { Session } from './session.js';

export const TOOL_OUTCOME_UNKNOWN =
  'The tool call was interrupted before it reported a result; its outcome is unknown. Check its effects before repeating it.';
export const TOOL_NOT_STARTED = 'The tool call was not run because the turn was interrupted.';

/**
 * The drafts that close whatever `session` left open: an open compaction is abandoned, open tool
 * calls are answered, the open step and turn end (`interrupted`). Empty when nothing is open.
 */
export function repairDrafts(session: Session, at: number): EventDraft[] {
  const state = session.state;
  const drafts: EventDraft[] = [];
  if (state.openCompaction !== null) {
    drafts.push({ type: 'compact/end', at, compactionId: state.openCompaction, outcome: 'abandoned' });
  }
  const step = state.openStep;
  if (step) {
    for (const call of step.calls.values()) {
      if (call.answered) continue;
      drafts.push({
        type: 'tool/result',
        at,
        turn: step.turn,
        step: step.step,
        callId: call.callId,
        name: call.name,
        status: call.started ? 'interrupted' : 'skipped',
        output: call.started ? TOOL_OUTCOME_UNKNOWN : TOOL_NOT_STARTED,
      });
    }
    drafts.push({ type: 'step/end', at, turn: step.turn, step: step.step });
  }
  if (state.openTurn !== null) drafts.push({ type: 'turn/end', at, turn: state.openTurn, reason: 'interrupted' });
  return drafts;
}
