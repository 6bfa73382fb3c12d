// A `dh eval` run for the web console: its workflow's status, its progress while it runs (the evalProgress
// query), and once it completed the report re-derived from the logs, as `dh eval --show` prints it.
import { WorkflowNotFoundError } from '@temporalio/client';
import type { SessionClient } from '../client/session-client.js';
import { DhError } from '../core/index.js';
import { buildEvalReport } from '../eval/eval-report.js';
import { evalProgressQuery, evalWorkflowId, type EvalRunResult } from '../shared/eval-contracts.js';
import type { SessionStore } from '../stores/session-store.js';
import type { EvalRunView } from './console-api.js';

export const EVAL_NOT_FOUND = 'EVAL_NOT_FOUND';

export async function evalRunView(
  sessions: SessionClient | null,
  store: SessionStore,
  runId: string,
): Promise<EvalRunView> {
  if (sessions === null) {
    throw new DhError('TEMPORAL_UNREACHABLE', 'Temporal is not reachable: an eval run is read from its workflow');
  }
  const handle = sessions.client.workflow.getHandle(evalWorkflowId(runId));
  let status: string;
  try {
    status = (await handle.describe()).status.name;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) {
      throw new DhError(EVAL_NOT_FOUND, `no eval run "${runId}" on this Temporal namespace`, { runId });
    }
    throw error;
  }
  if (status === 'RUNNING') {
    const progress = await handle.query(evalProgressQuery).catch(() => null);
    return { runId, status, progress, report: null };
  }
  if (status !== 'COMPLETED') return { runId, status, progress: null, report: null };
  const result = (await handle.result()) as EvalRunResult;
  return { runId, status, progress: null, report: await buildEvalReport(result, (id) => store.read(id)) };
}
