// A short name for a tool call that waits for approval, for buttons and typing: five hex digits of the
// call id's digest. Only one call waits at a time, so the workflow resolves it against that call alone.
import { sha256Digest } from './canonical-json.js';

export function approvalShortId(callId: string): string {
  return sha256Digest(`approval:${callId}`).slice('sha256:'.length, 'sha256:'.length + 5);
}

/** The waiting call's id when `given` names it (its id or its short id); otherwise `given` unchanged. */
export function resolveApprovalId(given: string, waitingCallId: string | undefined): string {
  if (waitingCallId === undefined) return given;
  return given === waitingCallId || given === approvalShortId(waitingCallId) ? waitingCallId : given;
}
