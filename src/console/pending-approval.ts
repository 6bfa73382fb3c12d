// The tool call waiting for approval, for the console: who waits comes from the workflow's `state` (the one
// authority on what waits now), its arguments and place from the log (the answer that asked for the call and
// its `approval/request`).
import { approvalShortId, type SessionEvent } from '../core/index.js';
import type { SessionStateView } from '../shared/session-messages.js';
import type { PendingApproval } from './console-api.js';

const ARGUMENTS_PREVIEW_CHARS = 500;

export function pendingApproval(
  state: SessionStateView | null,
  events: readonly SessionEvent[],
): PendingApproval | null {
  const waiting = state?.pendingApproval ?? null;
  if (state === null || waiting === null) return null;
  let args: string | null = null;
  let request: Extract<SessionEvent, { type: 'approval/request' }> | null = null;
  for (const event of events) {
    if (event.type === 'assistant/message') {
      const call = event.toolCalls.find((c) => c.id === waiting.callId);
      if (call !== undefined) args = call.arguments;
    } else if (event.type === 'approval/request' && event.callId === waiting.callId) {
      request = event;
    }
  }
  return {
    callId: waiting.callId,
    shortId: waiting.shortId ?? approvalShortId(waiting.callId),
    tool: waiting.name,
    reason: waiting.reason,
    argumentsPreview:
      args === null || args.length <= ARGUMENTS_PREVIEW_CHARS ? args : `${args.slice(0, ARGUMENTS_PREVIEW_CHARS - 1)}…`,
    turn: request?.turn ?? state.turn,
    step: request?.step ?? state.step,
    requestSeq: request?.seq ?? null,
  };
}
