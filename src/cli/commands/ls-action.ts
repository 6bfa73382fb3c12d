// What `dh ls` does; ls-command.ts defines it and loads this module when it runs. Subagents are drawn
// under their parents: from each log's delegation (offline), else from the workflow's DhParentSession.
import { Client, Connection } from '@temporalio/client';
import { sessionsWorkflowFacts, type WorkflowFacts } from '../../client/session-workflow-facts.js';
import { temporalTlsFromEnv } from '../../config/temporal-tls.js';
import { isExternalTemporal, localStackStatus } from '../../local-stack/local-stack.js';
import { delegationsOf } from '../../stores/delegated-sessions.js';
import type { SessionSummary } from '../../stores/session-store.js';
import { openStoreOnly } from '../cli-context.js';
import { usageError } from '../exit-codes.js';
import { cliAction } from '../cli-action.js';
import { textTable } from '../text-table.js';
import { clientDataConverter } from '../../codec/aes-gcm-codec.js';
import { sessionTree } from '../../operations/session-tree.js';
import { listCursorOf, parseListCursor } from '../../stores/list-order.js';
import { listWithoutEvals } from '../../operations/list-without-evals.js';

export interface SessionListing extends SessionSummary {
  /** `running` / `idle` (from the session's search attribute when set), `closed`, `failed`, ..., or `-` when Temporal is not reachable. */
  readonly status: string;
  /**
   * A subagent's parent and delegation call: from its log's `session/start`, else (a child whose log has no
   * event yet) from its workflow's DhParentSession attribute, with no call id. Null for a top-level session.
   */
  readonly subagentOf: { readonly sessionId: string; readonly callId: string | null } | null;
  /** Its depth in the listed tree (0: drawn at the top level). */
  readonly depth: number;
}

export const lsCommand = cliAction(
  async (options: { limit: string; after?: string; json?: boolean; evals?: boolean }) => {
    const limit = Number(options.limit);
    if (!Number.isInteger(limit) || limit < 1) throw usageError('--limit must be a positive integer');
    const after = options.after !== undefined ? parseListCursor(options.after) : undefined;
    if (after === null) {
      throw usageError(
        `--after "${options.after}" is not a listing cursor (<createdAt>.<sessionId>, as dh ls prints it)`,
      );
    }
    const opened = await openStoreOnly();
    const { config, store } = opened;
    let sessions: SessionSummary[];
    let delegations: Awaited<ReturnType<typeof delegationsOf>>;
    try {
      sessions =
        options.evals === true
          ? await store.list({ limit, ...(after !== undefined ? { after } : {}) })
          : await listWithoutEvals(store, { limit, ...(after !== undefined ? { after } : {}) });
      delegations = await delegationsOf(
        store,
        sessions.map((s) => s.sessionId),
      );
    } finally {
      await opened.close();
    }
    const status = await localStackStatus(config);
    const address = isExternalTemporal() ? config.temporalAddress : status.address;
    const statuses = address !== null ? await workflowStatuses(address, config.namespace, sessions) : null;
    const { rows, tree } = listingTree(sessions, delegations, statuses);
    // A full page may have more after it: its last session (in store order, not tree order) is the cursor.
    const last = sessions.length === limit ? sessions.at(-1) : undefined;
    const next = last !== undefined ? listCursorOf(last) : null;
    if (options.json) {
      process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      if (next !== null) process.stderr.write(`dh: more: dh ls --limit ${limit} --after ${next}\n`);
      return;
    }
    if (rows.length === 0) {
      process.stdout.write(after ? 'no more sessions\n' : 'no sessions yet: start one with dh run "<task>"\n');
      return;
    }
    const table = [
      ['SESSION', 'STATUS', 'EVENTS', 'CREATED', 'PARENT'],
      ...rows.map((r, i) => [
        `${tree[i] ?? ''}${r.sessionId}${r.subagentOf !== null && r.subagentOf.callId !== null ? ` (${r.subagentOf.callId})` : ''}`,
        r.status,
        String(r.head),
        new Date(r.createdAt).toISOString().replace('T', ' ').slice(0, 19),
        parentColumn(r),
      ]),
    ];
    for (const line of textTable(table)) process.stdout.write(`${line}\n`);
    if (next !== null) process.stdout.write(`more: dh ls --limit ${limit} --after ${next}\n`);
    if (statuses === null) {
      process.stderr.write(
        address === null
          ? 'dh: Temporal is not running (dh up); statuses unknown\n'
          : `dh: Temporal at ${address} is not reachable; statuses unknown\n`,
      );
    }
  },
);

/** The listing in tree order (each subagent under its parent when the parent is listed too), and each row's drawing. */
function listingTree(
  sessions: readonly SessionSummary[],
  delegations: ReadonlyMap<string, { readonly parentSessionId: string; readonly callId: string }>,
  statuses: ReadonlyMap<string, WorkflowFacts> | null,
): { rows: SessionListing[]; tree: string[] } {
  const nodes = sessions.map((s) => {
    const delegation = delegations.get(s.sessionId);
    const attribute = statuses?.get(s.sessionId)?.parent ?? null;
    const subagentOf = delegation
      ? { sessionId: delegation.parentSessionId, callId: delegation.callId }
      : attribute !== null
        ? { sessionId: attribute, callId: null }
        : null;
    return {
      summary: s,
      subagentOf,
      sessionId: s.sessionId,
      createdAt: s.createdAt,
      parentSessionId: subagentOf?.sessionId ?? null,
    };
  });
  const places = sessionTree(nodes);
  return {
    rows: places.map(({ node, depth }) => ({
      ...node.summary,
      status: statuses?.get(node.sessionId)?.status ?? '-',
      subagentOf: node.subagentOf,
      depth,
    })),
    tree: places.map((p) => p.prefix),
  };
}

/** A fork's origin; a subagent's parent when it is not drawn under it (not in the listing). */
function parentColumn(row: SessionListing): string {
  if (row.subagentOf !== null && row.depth === 0) return `subagent of ${row.subagentOf.sessionId}`;
  return row.parentSessionId ?? '';
}

/** Status (and DhParentSession) per session id, or null when Temporal cannot be reached. */
async function workflowStatuses(
  address: string,
  namespace: string,
  sessions: readonly SessionSummary[],
): Promise<Map<string, WorkflowFacts> | null> {
  // A bad TLS setting is a configuration error to report, not a server that is down.
  const tls = temporalTlsFromEnv();
  let connection: Connection;
  try {
    connection = await Connection.connect({ address, connectTimeout: 3_000, ...(tls !== undefined ? { tls } : {}) });
  } catch {
    return null;
  }
  try {
    const client = new Client({ connection, namespace, ...clientDataConverter() });
    return await sessionsWorkflowFacts(
      client,
      sessions.map((s) => s.sessionId),
      5_000,
    );
  } finally {
    await connection.close();
  }
}
