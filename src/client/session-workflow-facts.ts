// What Temporal says about sessions' workflows, as `dh ls` and the web console show it: the status word
// (the session's own status attribute while running, else how the run ended) and its DhParentSession.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { SESSION_PARENT_ATTRIBUTE, SESSION_STATUS_ATTRIBUTE } from '../shared/search-attributes.js';
import { sessionWorkflowId } from '../shared/session-messages.js';

export interface WorkflowFacts {
  readonly status: string;
  readonly parent: string | null;
}

const DESCRIBE_CONCURRENCY = 8;

/**
 * A session's status as `dh ls` and the console word it: its own DhSessionStatus while the run is open, else
 * how the run ended (`closed` for completed, `timed out`, …). `execution` is the status name, e.g. `RUNNING`.
 */
export function sessionStatusWord(execution: string, own: unknown): string {
  if (execution === 'RUNNING') return typeof own === 'string' ? own : 'running';
  return execution === 'COMPLETED' ? 'closed' : execution.toLowerCase().replace(/_/g, ' ');
}

/** One session's facts; `no workflow` when it has none. Throws when Temporal does not answer in time. */
export async function sessionWorkflowFacts(
  client: Client,
  sessionId: string,
  deadlineMs: number,
): Promise<WorkflowFacts> {
  try {
    const d = await client.withDeadline(Date.now() + deadlineMs, () =>
      client.workflow.getHandle(sessionWorkflowId(sessionId)).describe(),
    );
    const attribute = d.typedSearchAttributes.get(SESSION_STATUS_ATTRIBUTE);
    const parent = d.typedSearchAttributes.get(SESSION_PARENT_ATTRIBUTE);
    const status = sessionStatusWord(d.status.name, attribute);
    return { status, parent: typeof parent === 'string' && parent !== '' ? parent : null };
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { status: 'no workflow', parent: null };
    throw error;
  }
}

/** Facts per session id, a few describes at a time; null as soon as one finds Temporal unreachable. */
export async function sessionsWorkflowFacts(
  client: Client,
  sessionIds: readonly string[],
  deadlineMs: number,
): Promise<Map<string, WorkflowFacts> | null> {
  const out = new Map<string, WorkflowFacts>();
  let next = 0;
  let unreachable = false;
  const work = async (): Promise<void> => {
    while (next < sessionIds.length && !unreachable) {
      const id = sessionIds[next++];
      if (id === undefined) return;
      try {
        out.set(id, await sessionWorkflowFacts(client, id, deadlineMs));
      } catch {
        unreachable = true;
      }
    }
  };
  await Promise.all(Array.from({ length: DESCRIBE_CONCURRENCY }, work));
  return unreachable ? null : out;
}
