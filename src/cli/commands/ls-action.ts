// What `dh ls` does; ls-command.ts defines it and loads this module when it runs.
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { temporalTlsFromEnv } from '../../config/temporal-tls.js';
import { isExternalTemporal, localStackStatus } from '../../local-stack/local-stack.js';
import { SESSION_STATUS_ATTRIBUTE } from '../../shared/search-attributes.js';
import { sessionWorkflowId } from '../../shared/session-messages.js';
import type { SessionSummary } from '../../stores/session-store.js';
import { openStoreOnly } from '../cli-context.js';
import { usageError } from '../exit-codes.js';
import { cliAction } from '../cli-action.js';
import { clientDataConverter } from '../../codec/aes-gcm-codec.js';

export interface SessionListing extends SessionSummary {
  /** `running` / `idle` (from the session's search attribute when set), `closed`, `failed`, ..., or `-` when Temporal is not reachable. */
  readonly status: string;
}

const DESCRIBE_CONCURRENCY = 8;

export const lsCommand = cliAction(async (options: { limit: string; json?: boolean }) => {
  const limit = Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1) throw usageError('--limit must be a positive integer');
  const opened = await openStoreOnly();
  const { config, store } = opened;
  let sessions: SessionSummary[];
  try {
    sessions = await store.list({ limit });
  } finally {
    await opened.close();
  }
  const status = await localStackStatus(config);
  const address = isExternalTemporal() ? config.temporalAddress : status.address;
  const statuses = address !== null ? await workflowStatuses(address, config.namespace, sessions) : null;
  const rows: SessionListing[] = sessions.map((s) => ({ ...s, status: statuses?.get(s.sessionId) ?? '-' }));
  if (options.json) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return;
  }
  if (rows.length === 0) {
    process.stdout.write('no sessions yet: start one with dh run "<task>"\n');
    return;
  }
  const table = [
    ['SESSION', 'STATUS', 'EVENTS', 'CREATED', 'PARENT'],
    ...rows.map((r) => [
      r.sessionId,
      r.status,
      String(r.head),
      new Date(r.createdAt).toISOString().replace('T', ' ').slice(0, 19),
      r.parentSessionId ?? '',
    ]),
  ];
  const widths = table[0]?.map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length))) ?? [];
  for (const row of table) {
    process.stdout.write(
      `${row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd()}\n`,
    );
  }
  if (statuses === null) {
    process.stderr.write(
      address === null
        ? 'dh: Temporal is not running (dh up); statuses unknown\n'
        : `dh: Temporal at ${address} is not reachable; statuses unknown\n`,
    );
  }
});

/** Status per session id, or null when Temporal cannot be reached. */
async function workflowStatuses(
  address: string,
  namespace: string,
  sessions: readonly SessionSummary[],
): Promise<Map<string, string> | null> {
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
    const out = new Map<string, string>();
    let next = 0;
    let unreachable = false;
    const work = async (): Promise<void> => {
      while (next < sessions.length && !unreachable) {
        const session = sessions[next++];
        if (session === undefined) return;
        try {
          const d = await client.withDeadline(Date.now() + 5_000, () =>
            client.workflow.getHandle(sessionWorkflowId(session.sessionId)).describe(),
          );
          const attribute = d.typedSearchAttributes.get(SESSION_STATUS_ATTRIBUTE);
          out.set(
            session.sessionId,
            d.status.name === 'RUNNING'
              ? typeof attribute === 'string'
                ? attribute
                : 'running'
              : d.status.name === 'COMPLETED'
                ? 'closed'
                : d.status.name.toLowerCase().replace(/_/g, ' '),
          );
        } catch (error) {
          if (error instanceof WorkflowNotFoundError) out.set(session.sessionId, 'no workflow');
          else unreachable = true;
        }
      }
    };
    await Promise.all(Array.from({ length: DESCRIBE_CONCURRENCY }, work));
    return unreachable ? null : out;
  } finally {
    await connection.close();
  }
}
