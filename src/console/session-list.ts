// GET /api/sessions: a page of sessions, newest first, each subagent under its parent (as `dh ls` draws
// them), with what its log adds up to and its workflow's status. A status or date filter is answered by
// Temporal visibility when it can; otherwise the store's listing is paged by its own cursor.
import type { Client } from '@temporalio/client';
import { DhError } from '../core/index.js';
import { sessionsWorkflowFacts } from '../client/session-workflow-facts.js';
import { EVAL_SESSION_PREFIX } from '../eval/eval-log.js';
import { sessionTree } from '../operations/session-tree.js';
import { delegationsOf } from '../stores/delegated-sessions.js';
import type { SessionStore } from '../stores/session-store.js';
import type { SessionList, SessionListItem } from './console-api.js';
import { OverviewMemo } from './overview-memo.js';
import { decodePageToken, encodePageToken, type PageStart } from './session-page-token.js';
import { visibilityCanFilter, visibilityPage } from './visibility-page.js';

const DESCRIBE_DEADLINE_MS = 3_000;
/** A page read at most this many batches to fill itself (a rare `q`): the rest is the next page's. */
const MAX_BATCHES = 20;

export interface SessionSearch {
  readonly limit: number;
  readonly status?: string;
  /** Text the session's id or messages contain (any case). */
  readonly q?: string;
  /** Bounds of when the session started, epoch ms. */
  readonly since?: number;
  readonly until?: number;
  readonly pageToken?: string;
}

interface Candidate {
  readonly sessionId: string;
  readonly createdAt: number;
  readonly status?: string;
  readonly parent?: string | null;
}

export async function listSessions(
  store: SessionStore,
  client: Client | null,
  search: SessionSearch,
  memo: OverviewMemo = new OverviewMemo(),
): Promise<SessionList> {
  // The filters a visibility token was written for: it pages that query only.
  const scope = JSON.stringify([search.status ?? null, search.since ?? null, search.until ?? null]);
  const start = search.pageToken !== undefined ? decodePageToken(search.pageToken, scope) : undefined;
  const visibility =
    start?.source === 'visibility' ||
    (start === undefined && search.status !== undefined && visibilityCanFilter(search.status));
  if (visibility && client === null) {
    throw new DhError('TEMPORAL_UNREACHABLE', 'filtering by status needs Temporal, which does not answer');
  }
  const needle = search.q?.toLowerCase();
  const kept: Candidate[] = [];
  let next: PageStart | null = start ?? null;
  let first = true;
  for (let batch = 0; batch < MAX_BATCHES && kept.length < search.limit && (first || next !== null); batch++) {
    first = false;
    const want = search.limit - kept.length;
    const page =
      visibility && client !== null
        ? await fromVisibility(client, search, want, next?.source === 'visibility' ? next.token : undefined)
        : await fromStore(store, search, want, next?.source === 'store' ? next : undefined);
    next = page.next;
    for (const c of page.candidates) {
      if (c.sessionId.startsWith(EVAL_SESSION_PREFIX)) continue;
      if (needle !== undefined && !(await matches(store, memo, c.sessionId, needle))) continue;
      kept.push(c);
    }
  }
  const sessions = await describe(store, client, kept, memo, search.status);
  return {
    sessions,
    nextPageToken: next !== null ? encodePageToken(next, scope) : null,
    source: visibility ? 'visibility' : 'store',
  };
}

async function fromVisibility(
  client: Client,
  search: SessionSearch,
  want: number,
  token: Uint8Array | undefined,
): Promise<{ candidates: Candidate[]; next: PageStart | null }> {
  const { rows, next } = await visibilityPage(client, search, want, token);
  return {
    candidates: rows.map((r) => ({
      sessionId: r.sessionId,
      createdAt: r.startedAt,
      status: r.status,
      parent: r.parent,
    })),
    next: next !== null ? { source: 'visibility', token: next } : null,
  };
}

/** The store's listing from `start`, with the date bounds applied (it is ordered newest first). */
async function fromStore(
  store: SessionStore,
  search: SessionSearch,
  want: number,
  start: Extract<PageStart, { source: 'store' }> | undefined,
): Promise<{ candidates: Candidate[]; next: PageStart | null }> {
  const page = await store.list({ limit: want, ...(start !== undefined ? { after: start.after } : {}) });
  const last = page.at(-1);
  const older = search.since !== undefined && last !== undefined && last.createdAt < search.since;
  return {
    candidates: page.filter(
      (s) =>
        (search.until === undefined || s.createdAt <= search.until) &&
        (search.since === undefined || s.createdAt >= search.since),
    ),
    next:
      page.length < want || last === undefined || older
        ? null
        : { source: 'store', after: { createdAt: last.createdAt, sessionId: last.sessionId } },
  };
}

async function matches(store: SessionStore, memo: OverviewMemo, sessionId: string, needle: string): Promise<boolean> {
  if (sessionId.toLowerCase().includes(needle)) return true;
  return (await memo.of(store, sessionId))?.text.includes(needle) ?? false;
}

/** Each kept session with its log's figures; statuses from visibility, or described when it did not list them. */
async function describe(
  store: SessionStore,
  client: Client | null,
  kept: readonly Candidate[],
  memo: OverviewMemo,
  status: string | undefined,
): Promise<SessionListItem[]> {
  const ids = kept.map((c) => c.sessionId);
  const undescribed = kept.filter((c) => c.status === undefined).map((c) => c.sessionId);
  const [delegations, facts] = await Promise.all([
    delegationsOf(store, ids),
    client !== null && undescribed.length > 0 ? sessionsWorkflowFacts(client, undescribed, DESCRIBE_DEADLINE_MS) : null,
  ]);
  const nodes = await Promise.all(
    kept.map(async (c) => {
      const known = await memo.of(store, c.sessionId);
      const parent =
        delegations.get(c.sessionId)?.parentSessionId ?? c.parent ?? facts?.get(c.sessionId)?.parent ?? null;
      const item: Omit<SessionListItem, 'depth'> = {
        sessionId: c.sessionId,
        status: c.status ?? facts?.get(c.sessionId)?.status ?? 'unknown',
        turns: known?.overview.turns ?? 0,
        tokens: known === null ? 0 : known.overview.usage.total + known.overview.subagentUsage.total,
        cacheReadShare: known?.overview.cacheReadShare ?? null,
        lastActivity: known?.overview.lastAt ?? null,
        parentSessionId: parent,
      };
      return { sessionId: c.sessionId, createdAt: c.createdAt, parentSessionId: parent, item };
    }),
  );
  const items: SessionListItem[] = sessionTree(nodes).map(({ node, depth }) => ({ ...node.item, depth }));
  // Visibility filtered already; the store's listing is filtered here by what Temporal said.
  return status === undefined ? items : items.filter((s) => s.status === status);
}
