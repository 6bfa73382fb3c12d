// Signals that reached a run with its first task are handled in the order they arrived. The SDK holds them
// until a handler for their name is set and then hands them out in the order the handlers are set, so a
// `close` sent before an `inject` would be seen after it (and the inject accepted by a closing session).
import { patched } from '@temporalio/workflow';
import { SIGNALS_IN_ARRIVAL_ORDER } from './workflow-patches.js';

/** The part of the SDK's activator this relies on (public members of its class, not of its API). */
interface SignalBuffer {
  readonly bufferedSignals: Array<{ readonly signalName?: string | null }>;
  signalWorkflow(signal: { readonly signalName?: string | null }): void;
}

function signalBuffer(): SignalBuffer | undefined {
  const activator = (globalThis as { __TEMPORAL_ACTIVATOR__?: Partial<SignalBuffer> }).__TEMPORAL_ACTIVATOR__;
  if (!Array.isArray(activator?.bufferedSignals) || typeof activator.signalWorkflow !== 'function') return undefined;
  return activator as SignalBuffer;
}

/**
 * Runs `register` (which sets every named signal handler, synchronously) with the held signals taken out of
 * the SDK's buffer first, then hands them to their handlers in arrival order. Each still goes through the
 * SDK's own dispatch (raw arguments, handler bookkeeping); one with no handler goes back to the buffer.
 * The patch is asked only when the order could differ (held signals of two names or more), so most runs
 * carry no marker and runs recorded before it replay as they ran. Should the SDK's buffer ever change
 * shape, this falls back to the SDK's order (the session-message-fates test would fail).
 */
export function registerInArrivalOrder(register: () => void): void {
  const buffer = signalBuffer();
  const names = new Set(buffer?.bufferedSignals.map((s) => s.signalName));
  if (buffer === undefined || names.size < 2 || !patched(SIGNALS_IN_ARRIVAL_ORDER)) return register();
  const held = buffer.bufferedSignals.splice(0);
  register();
  for (const signal of held) buffer.signalWorkflow(signal);
}
