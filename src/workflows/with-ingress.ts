// The one way an append activity is called: hand it the ingress, and absorb what it logged.
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
 * ingress for the next call. An interrupted or failed call absorbs nothing: the next one passes them again.
 */
export async function withIngress<T extends AppendOutcome | Interrupted>(
  state: SessionState,
  call: (cursor: LogCursor) => Promise<T>,
  claimed: (outcome: Exclude<T, Interrupted>) => readonly string[] = () => [],
): Promise<T> {
  const passed = state.inbox.pass();
  const outcome = await call({ knownHead: state.head, ingress: passed });
  if (isLogged(outcome)) {
    state.head = outcome.head;
    state.inbox.absorb(passed, claimed(outcome));
  }
  return outcome;
}

function isLogged<T extends AppendOutcome | Interrupted>(outcome: T): outcome is Exclude<T, Interrupted> {
  return outcome !== INTERRUPTED;
}
