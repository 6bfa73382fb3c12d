// One page of session workflows from Temporal visibility, for the console's filtered list: a list query by
// status and start time, paged by Temporal's own token, so a fleet of any size lists in constant work.
import type { Client } from '@temporalio/client';
import { decodeTypedSearchAttributes } from '@temporalio/common/lib/converter/payload-search-attributes.js';
// The package is CommonJS: Node's ESM loader offers it only as a default export.
import proto from '@temporalio/proto';
import { sessionStatusWord } from '../client/session-workflow-facts.js';
import { SESSION_PARENT_ATTRIBUTE, SESSION_STATUS_ATTRIBUTE } from '../shared/search-attributes.js';
import { SESSION_WORKFLOW_PREFIX } from '../shared/session-messages.js';

/** Session statuses visibility can filter by: the session's own (while its run is open) or how it ended. */
const EXECUTION_STATUS: Readonly<Record<string, string>> = {
  closed: 'Completed',
  failed: 'Failed',
  terminated: 'Terminated',
  canceled: 'Canceled',
  'timed out': 'TimedOut',
};
const OPEN_STATUSES = new Set(['idle', 'running', 'aborting']);

export function visibilityCanFilter(status: string): boolean {
  return OPEN_STATUSES.has(status) || status in EXECUTION_STATUS;
}

export interface VisibilityRow {
  readonly sessionId: string;
  readonly status: string;
  readonly parent: string | null;
  readonly startedAt: number;
}

export interface VisibilityQuery {
  readonly status?: string;
  readonly since?: number;
  readonly until?: number;
}

/** The list query; every value in it is one this module chose or a number, never caller text. */
export function visibilityQuery(q: VisibilityQuery): string {
  const parts = [`WorkflowType = 'agentSession'`, `WorkflowId STARTS_WITH '${SESSION_WORKFLOW_PREFIX}'`];
  if (q.status !== undefined && OPEN_STATUSES.has(q.status)) {
    parts.push(`ExecutionStatus = 'Running'`, `${SESSION_STATUS_ATTRIBUTE.name} = '${q.status}'`);
  } else if (q.status !== undefined) {
    parts.push(`ExecutionStatus = '${EXECUTION_STATUS[q.status] ?? 'Unspecified'}'`);
  }
  if (q.since !== undefined) parts.push(`StartTime >= '${visibilityTime(q.since)}'`);
  if (q.until !== undefined) parts.push(`StartTime <= '${visibilityTime(q.until)}'`);
  return parts.join(' AND ');
}

/**
 * Temporal reads four-digit years only (`+030658-…` is an invalid query): a bound outside them is the nearest
 * one inside, which keeps exactly the same sessions (none started before year 0 or after 9999).
 */
const EARLIEST_MS = Date.parse('0000-01-01T00:00:00.000Z');
const LATEST_MS = Date.parse('9999-12-31T23:59:59.999Z');
function visibilityTime(ms: number): string {
  return new Date(Math.min(Math.max(ms, EARLIEST_MS), LATEST_MS)).toISOString();
}

export async function visibilityPage(
  client: Client,
  query: VisibilityQuery,
  pageSize: number,
  token: Uint8Array | undefined,
): Promise<{ rows: VisibilityRow[]; next: Uint8Array | null }> {
  const response = await client.workflowService.listWorkflowExecutions({
    namespace: client.options.namespace,
    query: visibilityQuery(query),
    pageSize,
    ...(token !== undefined ? { nextPageToken: token } : {}),
  });
  const rows = (response.executions ?? []).flatMap((e): VisibilityRow[] => {
    const workflowId = e.execution?.workflowId ?? '';
    if (!workflowId.startsWith(SESSION_WORKFLOW_PREFIX)) return [];
    const attributes = decodeTypedSearchAttributes(e.searchAttributes?.indexedFields);
    const own = attributes.get(SESSION_STATUS_ATTRIBUTE);
    const parent = attributes.get(SESSION_PARENT_ATTRIBUTE);
    return [
      {
        sessionId: workflowId.slice(SESSION_WORKFLOW_PREFIX.length),
        status: sessionStatusWord(executionStatusName(Number(e.status ?? 0)), own),
        parent: typeof parent === 'string' && parent !== '' ? parent : null,
        startedAt: Number(e.startTime?.seconds ?? 0) * 1000 + Math.floor((e.startTime?.nanos ?? 0) / 1e6),
      },
    ];
  });
  const next = response.nextPageToken;
  return { rows, next: next !== null && next !== undefined && next.length > 0 ? next : null };
}

/** `RUNNING`, `COMPLETED`, …: the enum's name without its prefix, as the SDK's describe gives it. */
function executionStatusName(status: number): string {
  const name = proto.temporal.api.enums.v1.WorkflowExecutionStatus[status] ?? 'WORKFLOW_EXECUTION_STATUS_UNSPECIFIED';
  return name.replace(/^WORKFLOW_EXECUTION_STATUS_/, '');
}
