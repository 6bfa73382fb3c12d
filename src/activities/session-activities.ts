// The session activities: every read and write of a session's log and every call out of the process.
// Each one is idempotent — it looks at what the log already holds for its slot and does only the rest —
// and returns receipts (seq, type, digest, chain head) of everything appended since the workflow's known head.
import type { SessionActivities } from '../shared/activity-queues.js';
import type { EvalActivities } from '../shared/eval-contracts.js';
import { evalStep } from './eval-step.js';
import { createActivityContext } from './activity-context.js';
import { appendInbox } from './append-inbox.js';
import { closeStep } from './close-step.js';
import { closeTurn } from './close-turn.js';
import { configureSession } from './configure-session.js';
import { compact } from './compact.js';
import { modelStep } from './model-step.js';
import { openSession } from './open-session.js';
import type { SessionRuntime } from './session-runtime.js';
import { toolStep } from './tool-step.js';

/** All eight session activities of one worker and the eval step, sharing its session cache and outbound gate. */
export function createSessionActivities(runtime: SessionRuntime): SessionActivities & EvalActivities {
  const context = createActivityContext(runtime);
  return {
    openSession: (input) => openSession(context, input),
    appendInbox: (input) => appendInbox(context, input),
    modelStep: (input) => modelStep(context, input),
    toolStep: (input) => toolStep(context, input),
    closeStep: (input) => closeStep(context, input),
    compact: (input) => compact(context, input),
    closeTurn: (input) => closeTurn(context, input),
    configureSession: (input) => configureSession(context, input),
    evalStep: (input) => evalStep(context, input),
  };
}
