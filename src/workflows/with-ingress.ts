// The one way an append activity is called: hand it the ingress, and absorb what it logged.
import { condition } from '@temporalio/workflow';
import type { AppendOutcome, IngressMessage } from '../shared/activity-contracts.js';
import { INTERRUPTED, type Interrupted } from './cancellable.js';
import type { SessionState } from './session-state.js';

/** What every append activity takes besides its own fields: the head the workflow knows, and the ingress. */
export interface LogCursor {
  readonly knownHead: number;
  readonly ingress: readonly IngressMessage[];
}

/**
 * Passes the ingress as it stands to `call` and absorbs its outcome: the new head, and the passed messages
 * moved to the queue less those `claimed` (given the outcome). Messages accepted while it ran stay in the
 * ingress for the next call, or the concurrent appendInbox logs them meanwhile (logIngressWhileBusy), which
 * this call first waits out: what that one logs is then queued (and claimable) before this call starts. An
 * interrupted or failed call absorbs nothing: the next one passes them again. Not async: every step runs
 * through here, and chained handlers make fewer promises (each one's stack recorded by the sandbox).
 */
export function withIngress<T extends AppendOutcome | Interrupted>(
  state: SessionState,
  call: (cursor: LogCursor) => Promise<T>,
  claimed: (outcome: Exclude<T, Interrupted>) => readonly string[] = () => [],
): Promise<T> {
  // Only while one is in flight: runs recorded without the concurrent appendInbox never wait here.
  if (state.ingressLogging) return condition(() => !state.ingressLogging).then(() => passIngress(state, call, claimed));
  return passIngress(state, call, claimed);
}

function passIngress<T extends AppendOutcome | Interrupted>(
  state: SessionState,
  call: (cursor: LogCursor) => Promise<T>,
  claimed: (outcome: Exclude<T, Interrupted>) => readonly string[],
): Promise<T> {
  const passed = state.inbox.pass();
  state.appendCalls++;
  state.appendRunning = true;
  const failed = (error: unknown): never => {
    state.inbox.release(passed);
    state.appendRunning = false;
    throw error;
  };
  let pending: Promise<T>;
  try {
    pending = call({ knownHead: state.head, ingress: passed });
  } catch (error) {
    // Thrown before it returned a promise (every caller awaits, so this reads as a rejection).
    return failed(error);
  }
  return pending.then((outcome) => {
    state.appendRunning = false;
    if (isLogged(outcome)) {
      absorbLogged(state, outcome);
      state.inbox.absorb(passed, claimed(outcome), outcome.head);
    } else {
      state.inbox.release(passed);
    }
    return outcome;
  }, failed);
}

/**
 * What an append logged: the head moves forward (two appenders may finish in either order), and a
 * `request/header` among its rows is this loop instance's. A step that fails after logging its header (a
 * refused request, exhausted retries, an overflow) never answers, yet the instance has its header: the next
 * step must log a `change`, not a `resume`, and must not compose the session prefix again.
 */
export function absorbLogged(state: SessionState, outcome: AppendOutcome): void {
  state.head = Math.max(state.head, outcome.head);
  if (!state.instance.headerRecorded && outcome.receipts.some((receipt) => receipt.type === 'request/header')) {
    state.instance = { ...state.instance, headerRecorded: true };
  }
}

function isLogged<T extends AppendOutcome | Interrupted>(outcome: T): outcome is Exclude<T, Interrupted> {
  return outcome !== INTERRUPTED;
}
