// The checks a session's children must pass after a chaos trial: exactly one child per delegation call,
// named as the parent's log fixes it; each child linked both ways (its start names the parent and the
// call, the parent's result names the child and says how it ended); one task and one completed turn per
// child; every child workflow completed under its parent; no other child workflow or log (no orphan).
import type { Client } from '@temporalio/client';
import {
  childSessionIdFor,
  DELEGATE_TOOL_NAME,
  DELEGATED_TASK_MESSAGE_ID,
  delegationOf,
  DhError,
  ErrorCode,
  parseDelegateArguments,
  sessionSpend,
  type SessionEvent,
} from '../../../src/core/index.js';
import { SESSION_PARENT_ATTRIBUTE } from '../../../src/shared/search-attributes.js';
import { sessionWorkflowId } from '../../../src/shared/session-messages.js';
import type { SessionStore } from '../../../src/stores/session-store.js';
import { sleep } from './chaos-messages.js';
import { ofType, type Tally } from './trial-counts.js';

export interface ChildLog {
  readonly sessionId: string;
  readonly callId: string;
  readonly events: readonly SessionEvent[];
}

export interface ChildrenCheckInput {
  readonly parentId: string;
  readonly parentEvents: readonly SessionEvent[];
  readonly store: SessionStore;
  readonly client: Client;
  /** Every session id the store holds (to find child logs no call names). */
  readonly storedSessions: readonly string[];
  /** Prefixes each problem (`child <id>: `); empty for the trial's own session. */
  readonly where: string;
  /** How long the workflow list may lag behind (visibility is eventually consistent). */
  readonly listWaitMs?: number;
}

/** Checks the children of one session; returns the logs of those that exist, in call order. */
export async function checkChildren(tally: Tally, input: ChildrenCheckInput): Promise<ChildLog[]> {
  const { parentId, parentEvents: events, where } = input;
  const count = (column: Parameters<Tally['count']>[0], problem: string) => tally.count(column, problem, where);
  const parentDepth = delegationOf(events)?.depth ?? 0;
  const children: ChildLog[] = [];
  const expected = new Set<string>();

  for (const answer of ofType(events, 'assistant/message')) {
    for (const [index, call] of answer.toolCalls.entries()) {
      if (call.name !== DELEGATE_TOOL_NAME) continue;
      const start = ofType(events, 'tool/start').find((s) => s.callId === call.id);
      const result = ofType(events, 'tool/result').find((r) => r.callId === call.id);
      // A call refused before it started (bad arguments, too deep) has no child, by design.
      if (!start) {
        if (result?.child) count('dangling', `delegation call ${call.id} has a child result but never started`);
        continue;
      }
      const childId = childSessionIdFor(parentId, answer.turn, answer.step, index);
      expected.add(childId);
      if (start.child !== childId) {
        count('dangling', `delegation call ${call.id} started child ${String(start.child)}, not ${childId}`);
        continue;
      }
      let log: SessionEvent[];
      try {
        log = await input.store.read(childId);
      } catch (error) {
        if (error instanceof DhError && error.code === ErrorCode.SessionNotFound) {
          count('lost', `delegation call ${call.id}: its child ${childId} has no log`);
          continue;
        }
        throw error;
      }
      children.push({ sessionId: childId, callId: call.id, events: log });
      const link = delegationOf(log);
      if (link?.parentSessionId !== parentId || link.callId !== call.id || link.depth !== parentDepth + 1)
        count('dangling', `child ${childId} does not name its parent and call: ${JSON.stringify(link ?? null)}`);
      const task = parseDelegateArguments(call.arguments);
      const given = ofType(log, 'inbox/enqueue').filter((e) => e.messageId === DELEGATED_TASK_MESSAGE_ID);
      if (given.length !== 1 || !task.ok || given[0]?.content !== task.value.task)
        count('dangling', `child ${childId} holds ${given.length} task(s), not the one its call gave`);

      // One task, one turn, and it completed (an error ending is a turn error of the child's own log check).
      const turns = ofType(log, 'turn/start').length;
      const end = ofType(log, 'turn/end').at(-1);
      if (turns === 0) count('lost', `child ${childId} never ran its task`);
      else if (turns > 1) count('duplicated', `child ${childId} ran ${turns} turns, not one`);
      else if (end && end.reason !== 'completed' && end.reason !== 'error')
        count('lost', `child ${childId}'s turn ended "${end.reason}"`);

      // The parent's record of the child is the child's log as it ended.
      if (result) {
        const reason = end?.reason ?? 'unfinished';
        const spent = JSON.stringify(sessionSpend(log));
        if (result.child?.sessionId !== childId || result.child.reason !== reason)
          count(
            'dangling',
            `call ${call.id}'s result names ${JSON.stringify(result.child ?? null)}, its child ended ${reason}`,
          );
        else if (JSON.stringify(result.child.usage) !== spent)
          count(
            'dangling',
            `call ${call.id}'s result counts usage ${JSON.stringify(result.child.usage)}, the child spent ${spent}`,
          );
      }
      await checkChildWorkflow(input.client, parentId, childId, (problem) => count('dangling', problem), count);
    }
  }

  // ---- no orphans: no child workflow under this parent, and no child log, that no call names ----
  for (const id of input.storedSessions)
    if (id.startsWith(`${parentId}.d`) && !expected.has(id)) count('dangling', `orphan child log ${id}`);
  const listed = await listChildren(input.client, parentId, expected, input.listWaitMs ?? 15_000);
  for (const id of expected)
    if (!listed.has(sessionWorkflowId(id)))
      count('dangling', `child workflow ${sessionWorkflowId(id)} is not listed under its parent`);
  const named = new Set([...expected].map(sessionWorkflowId));
  for (const id of listed) if (!named.has(id)) count('dangling', `orphan child workflow ${id}`);
  return children;
}

/** The child's workflow: completed, under its parent, and started once (its other runs continue it). */
async function checkChildWorkflow(
  client: Client,
  parentId: string,
  childId: string,
  dangling: (problem: string) => void,
  count: (column: 'duplicated', problem: string) => void,
): Promise<void> {
  const workflowId = sessionWorkflowId(childId);
  const description = await client.workflow.getHandle(workflowId).describe();
  if (description.status.name !== 'COMPLETED')
    dangling(`child workflow ${workflowId} is ${description.status.name}, not COMPLETED`);
  const parent = description.typedSearchAttributes.get(SESSION_PARENT_ATTRIBUTE);
  if (parent !== parentId) dangling(`child workflow ${workflowId} names parent ${String(parent)}`);
  let fresh = 0;
  for await (const run of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
    const history = await client.workflow.getHandle(workflowId, run.runId).fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    if (started && !started.continuedExecutionRunId) fresh++;
  }
  if (fresh > 1) count('duplicated', `child workflow ${workflowId} was started ${fresh} times`);
}

/** Workflow ids listed under `parentId`, once the list holds every expected child (or `waitMs` passed). */
async function listChildren(
  client: Client,
  parentId: string,
  expected: ReadonlySet<string>,
  waitMs: number,
): Promise<Set<string>> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const listed = new Set<string>();
    const query = `${SESSION_PARENT_ATTRIBUTE.name} = "${parentId}"`;
    for await (const execution of client.workflow.list({ query })) listed.add(execution.workflowId);
    if ([...expected].every((id) => listed.has(sessionWorkflowId(id))) || Date.now() > deadline) return listed;
    await sleep(500);
  }
}
