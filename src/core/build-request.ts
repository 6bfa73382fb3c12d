// The one request builder: a pure function of the log shared by the live loop, resume, replay, audit
// and the outbound gate. Its output is deep-frozen: a built request cannot be edited, only rebuilt.
import type { CallConfig, RequestHeader, ToolSchema } from './request-header.js';
import { foldRequestHeader } from './fold-request-header.js';
import type { Message } from './messages.js';
import type { SessionEvent } from './events.js';
import { deriveMessages } from './surface.js';
import { deepFreeze } from './deep-freeze.js';
import { DhError, ErrorCode } from './errors.js';
import type { Session } from './session.js';

/** A model request exactly as the log explains it. Deep-frozen. */
export interface BuiltRequest {
  readonly sessionId: string;
  /** The step this request belongs to (the open step of the log it was built from). */
  readonly turn: number;
  readonly step: number;
  readonly config: Readonly<CallConfig>;
  readonly system?: string;
  /** Tool schemas in recorded order (empty when the header has none). */
  readonly tools: readonly ToolSchema[];
  /** The header's session prefix followed by the derived history. */
  readonly messages: readonly Message[];
}

/** Builds the request for the open step of `events` (a pure fold; no cache is consulted). */
export function buildRequest(sessionId: string, events: readonly SessionEvent[]): BuiltRequest {
  return assembleRequest(sessionId, foldRequestHeader(events), lastStepStart(events), deriveMessages(events));
}

/** The same request from a live session's caches. Must equal `buildRequest(id, session.events)`. */
export function buildSessionRequest(session: Session): BuiltRequest {
  const open = session.state.openStep;
  return assembleRequest(
    session.sessionId,
    session.requestHeader(),
    open ? { turn: open.turn, step: open.step } : undefined,
    session.deriveMessages(),
  );
}

/** Assembles and deep-freezes a request; shared by the step builder and the compaction builder. */
export function assembleRequest(
  sessionId: string,
  header: RequestHeader | undefined,
  step: { turn: number; step: number } | undefined,
  history: Message[],
): BuiltRequest {
  if (!header)
    throw new DhError(ErrorCode.NoRequestHeader, `session "${sessionId}" has no request/header yet`, { sessionId });
  if (!step)
    throw new DhError(ErrorCode.NoRequestHeader, `session "${sessionId}" has no open step to build a request for`, {
      sessionId,
    });
  const request: BuiltRequest = {
    sessionId,
    turn: step.turn,
    step: step.step,
    config: header.config,
    ...(header.system !== undefined ? { system: header.system } : {}),
    tools: header.tools ?? [],
    // Header parts are frozen inside their (frozen) event; history messages are frozen projections.
    messages: header.prefix ? [...header.prefix, ...history] : history,
  };
  return deepFreeze(request);
}

/** The open step at the end of `events`, if any (a request is always for the open step). */
function lastStepStart(events: readonly SessionEvent[]): { turn: number; step: number } | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i];
    if (event?.type === 'step/end' || event?.type === 'turn/end') return undefined;
    if (event?.type === 'step/start') return { turn: event.turn, step: event.step };
  }
  return undefined;
}
