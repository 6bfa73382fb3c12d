// Which request header a model step logs: the first step of a loop instance always logs one (`initial`,
// or `resume` over a log that has one); later steps log one only when the composed header changed. Every
// header records its model's context window, and the default output limit of that window where the worker
// has one (context-window.ts).
import {
  canonicalJson,
  delegatedHeader,
  delegationOf,
  type RequestHeader,
  type Session,
  type SessionEvent,
} from '../core/index.js';
import { withContextWindow, withDefaultMaxTokens } from './context-window.js';
import { maxDelegationDepth } from './delegations.js';
import type { SessionRuntime } from './session-runtime.js';

export async function nextHeader(
  runtime: SessionRuntime,
  session: Session,
  instanceRecorded: boolean,
  turn: number,
  step: number,
  /** The log the composition sees: the session's, or that and the step's events about to be staged. */
  events: readonly SessionEvent[] = session.events,
): Promise<{ reason: 'initial' | 'resume' | 'change'; header: RequestHeader } | undefined> {
  const current = session.requestHeader();
  const composed = await runtime.composeHeader({
    sessionId: session.sessionId,
    turn,
    step,
    events,
    firstOfInstance: !instanceRecorded,
    current,
  });
  // A subagent sees the tools and the model its parent chose (its logged delegation), whatever composed the rest.
  const delegated = delegatedHeader(composed, delegationOf(session.events), maxDelegationDepth(runtime));
  const header = withDefaultMaxTokens(runtime, withContextWindow(runtime, delegated, current));
  if (!instanceRecorded) return { reason: current ? 'resume' : 'initial', header };
  if (current && canonicalJson(current) === canonicalJson(header)) return undefined;
  return { reason: current ? 'change' : 'initial', header };
}
