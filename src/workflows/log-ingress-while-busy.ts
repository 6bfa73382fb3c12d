// Messages accepted while a step's activity runs reach the log within moments, not when the step ends: a
// second activity (appendInbox) logs them concurrently, so every reader of the log sees them queued. The
// step's own activities stay the only writers of the step's events; the store rebases either append over
// the other's rows (src/activities/session-cache.ts), since logged messages are not model-visible until claimed.
import { condition, isCancellation } from '@temporalio/workflow';
import type { SessionProxies } from './session-proxies.js';
import type { SessionState } from './session-state.js';
import { absorbLogged } from './with-ingress.js';

/**
 * Runs for the whole run: whenever an append activity is in flight, or a turn runs between two (waiting for
 * an approval, for subagents), and messages were accepted that no activity was handed, logs them in one
 * appendInbox call (everything that arrived since the last one). While idle the session loop logs them itself.
 * A failed call hands them back to the ingress and waits for the next append activity, which passes them.
 */
export async function logIngressWhileBusy(state: SessionState, proxies: SessionProxies): Promise<void> {
  let failedDuringCall = -1;
  const busy = () => state.appendRunning || state.status === 'running' || state.status === 'aborting';
  for (;;) {
    try {
      await condition(() => busy() && state.appendCalls !== failedDuringCall && state.inbox.unpassed > 0);
    } catch (error) {
      // A cancelled run (a subagent whose parent went away) rejects the pending wait; the session loop
      // handles the cancellation, so this side task just ends instead of leaving an unhandled rejection.
      if (isCancellation(error)) return;
      throw error;
    }
    const passed = state.inbox.pass();
    state.ingressLogging = true;
    try {
      const outcome = await proxies.session.appendInbox({
        sessionId: state.sessionId,
        knownHead: state.head,
        ingress: passed,
      });
      absorbLogged(state, outcome);
      state.inbox.absorb(passed, [], outcome.head);
    } catch (error) {
      state.inbox.release(passed);
      if (isCancellation(error)) return;
      failedDuringCall = state.appendCalls;
    } finally {
      state.ingressLogging = false;
    }
  }
}
