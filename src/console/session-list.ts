// GET /api/sessions: the store's sessions, newest first, each subagent under its parent (as `dh ls`
// draws them), with what its log adds up to and its workflow's status when Temporal answers.
import type { Client } from '@temporalio/client';
import { sessionsWorkflowFacts } from '../client/session-workflow-facts.js';
import { sessionOverview, type SessionOverview } from '../operations/session-overview.js';
import { sessionTree } from '../operations/session-tree.js';
import { delegationsOf } from '../stores/delegated-sessions.js';
import { listWithoutEvals } from '../operations/list-without-evals.js';
import type { SessionStore } from '../stores/session-store.js';
import type { SessionList, SessionListItem } from './console-api.js';

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

export async function listSessions(
  store: SessionStore,
  client: Client | null,
  options: { readonly limit: number; readonly status?: string },
  memo: OverviewMemo = new OverviewMemo(),
): Promise<SessionList> {
  // Eval logs are `dh eval`'s candidates, one per evaluated step: their run's page shows them.
  const summaries = await listWithoutEvals(store, { limit: options.limit });
  const ids = summaries.map((s) => s.sessionId);
  const [delegations, statuses] = await Promise.all([
    delegationsOf(store, ids),
    client !== null ? sessionsWorkflowFacts(client, ids, DESCRIBE_DEADLINE_MS) : Promise.resolve(null),
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
