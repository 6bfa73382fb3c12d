// An update the workflow (or the worker it asked) refused, as the caller should see it: the refusal's own code and
// words, not the SDK's generic "Workflow Update failed" wrapper.
import { ApplicationFailure, WorkflowUpdateFailedError } from '@temporalio/client';
import { DhError } from '../core/index.js';

export async function unwrapUpdateRefusal<T>(sessionId: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure) {
      throw new DhError(error.cause.type ?? 'UPDATE_FAILED', error.cause.message, { sessionId });
    }
    throw error;
  }
}
