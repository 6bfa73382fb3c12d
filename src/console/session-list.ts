// GET /api/sessions: the store's sessions, newest first, each subagent under its parent (as `dh ls`
// draws them), with what its log adds up to and its workflow's status when Temporal answers.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { sessionOverview, type SessionOverview } from '../cli/operator/session-overview.js';
import { sessionTree } from '../cli/commands/session-tree.js';
import { SESSION_PARENT_ATTRIBUTE, SESSION_STATUS_ATTRIBUTE } from '../shared/search-attributes.js';
import { sessionWorkflowId } from '../shared/session-messages.js';
import { delegationsOf } from '../stores/delegated-sessions.js';
import type { SessionStore } from '../stores/session-store.js';
import type { SessionList, SessionListItem } from './console-api.js';

const DESCRIBE_CONCURRENCY = 8;
const DESCRIBE_DEADLINE_MS = 3_000;

/**
 * What each log added up to at a head, so a polled list reads again only the logs that grew (a browser
 * asks every 2 s; a long idle log is read once). One per server; bounded like the list it serves.
 */
export class OverviewMemo {
  readonly #byId = new Map<string, { readonly head: number; readonly overview: SessionOverview }>();

  async of(store: SessionStore, sessionId: string): Promise<SessionOverview> {
    const head = await store.head(sessionId);
    const known = this.#byId.get(sessionId);
    if (known?.head === head) return known.overview;
    const events = await store.read(sessionId, 0, head);
    const overview = sessionOverview(sessionId, events);
    this.#byId.delete(sessionId);
    this.#byId.set(sessionId, { head, overview });
    // Maps iterate in insertion order: past the bound, forget the longest-unchanged logs first.
    for (const id of this.#byId.keys()) {
      if (this.#byId.size <= MEMO_SESSIONS) break;
      this.#byId.delete(id);
    }
    return overview;
  }
}
const MEMO_SESSIONS = 2_000;

interface WorkflowFacts {
  readonly status: string;
  readonly parent: string | null;
}

export async function listSessions(
  store: SessionStore,
  client: Client | null,
  options: { readonly limit: number; readonly status?: string },
  memo: OverviewMemo = new OverviewMemo(),
): Promise<SessionList> {
  const summaries = await store.list({ limit: options.limit });
  const ids = summaries.map((s) => s.sessionId);
  const [delegations, statuses] = await Promise.all([
    delegationsOf(store, ids),
    client !== null ? workflowFacts(client, ids) : Promise.resolve(null),
  ]);
  const nodes = await Promise.all(
    summaries.map(async (summary) => {
      const overview = await memo.of(store, summary.sessionId);
      const parent = delegations.get(summary.sessionId)?.parentSessionId ?? statuses?.get(summary.sessionId)?.parent;
      return {
        sessionId: summary.sessionId,
        createdAt: summary.createdAt,
        parentSessionId: parent ?? null,
        item: {
          sessionId: summary.sessionId,
          status: statuses?.get(summary.sessionId)?.status ?? 'unknown',
          turns: overview.turns,
          tokens: overview.usage.total + overview.subagentUsage.total,
          cacheReadShare: overview.cacheReadShare,
          lastActivity: overview.lastAt,
          parentSessionId: parent ?? null,
        },
      };
    }),
  );
  const sessions: SessionListItem[] = sessionTree(nodes).map(({ node, depth }) => ({ ...node.item, depth }));
  return {
    sessions: options.status !== undefined ? sessions.filter((s) => s.status === options.status) : sessions,
  };
}

/** Status (and DhParentSession) per session, or null when Temporal does not answer. */
async function workflowFacts(client: Client, ids: readonly string[]): Promise<Map<string, WorkflowFacts> | null> {
  const out = new Map<string, WorkflowFacts>();
  let next = 0;
  let unreachable = false;
  const work = async (): Promise<void> => {
    while (next < ids.length && !unreachable) {
      const id = ids[next++];
      if (id === undefined) return;
      out.set(id, await describe(client, id).catch(() => ((unreachable = true), { status: 'unknown', parent: null })));
    }
  };
  await Promise.all(Array.from({ length: DESCRIBE_CONCURRENCY }, work));
  return unreachable ? null : out;
}

/** The status words `dh ls` shows: the session's own status attribute while running, else the run's end. */
export async function describe(client: Client, sessionId: string): Promise<WorkflowFacts> {
  try {
    const d = await client.withDeadline(Date.now() + DESCRIBE_DEADLINE_MS, () =>
      client.workflow.getHandle(sessionWorkflowId(sessionId)).describe(),
    );
    const attribute = d.typedSearchAttributes.get(SESSION_STATUS_ATTRIBUTE);
    const parent = d.typedSearchAttributes.get(SESSION_PARENT_ATTRIBUTE);
    const status =
      d.status.name === 'RUNNING'
        ? typeof attribute === 'string'
          ? attribute
          : 'running'
        : d.status.name === 'COMPLETED'
          ? 'closed'
          : d.status.name.toLowerCase().replace(/_/g, ' ');
    return { status, parent: typeof parent === 'string' && parent !== '' ? parent : null };
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { status: 'no workflow', parent: null };
    throw error;
  }
}
