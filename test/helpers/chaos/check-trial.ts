// The checks every chaos trial ends with, as counts (a run reports them in its table) plus one line per
// problem, over the trial's session and every child it delegated to: nothing lost, nothing twice, nothing
// left open (check-log.ts), every child where its call says (check-subagents.ts), every request the gate
// let through explained by its log, each workflow history mirroring its log, and each audit clean.
import type { Client } from '@temporalio/client';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { checkHistoryMirror } from '../../../src/client/history-mirror.js';
import {
  buildCompactionRequest,
  buildRequest,
  DELEGATED_TASK_MESSAGE_ID,
  type SessionEvent,
} from '../../../src/core/index.js';
import type { ProviderProfile } from '../../../src/providers/provider-profiles.js';
import { toWireBody } from '../../../src/providers/wire-body.js';
import type { SessionStore } from '../../../src/stores/session-store.js';
import type { AckedMessage } from './chaos-messages.js';
import { checkLog } from './check-log.js';
import { checkChildren, type ChildLog } from './check-subagents.js';
import { Tally, type TrialCounts } from './trial-counts.js';

export { ZERO_COUNTS, type TrialCounts } from './trial-counts.js';

export interface TrialCheckInput {
  readonly sessionId: string;
  readonly events: readonly SessionEvent[];
  readonly acked: readonly AckedMessage[];
  /** Chat-completion bodies the provider received, in arrival order (the children's among them). */
  readonly providerBodies: readonly string[];
  /** Tool runs (call ids, one per run) of the tools that log their runs, the children's included. */
  readonly toolRuns: readonly string[];
  /** Call ids that may run twice (their tool is idempotent). */
  readonly idempotentCall: (callId: string) => boolean;
  readonly profile: ProviderProfile;
  readonly store: SessionStore;
  readonly client: Client;
}

export interface TrialCheck {
  readonly counts: TrialCounts;
  readonly problems: readonly string[];
  /** Whether the audit ran (false: src/audit/audit-session.ts is not there). */
  readonly audited: boolean;
  /** Turns that ended with an error (not a gate refusal): reported, and a problem. */
  readonly turnErrors: number;
  /** Workflow runs of the session (continue-as-new hand-overs + 1), from the mirror check. */
  readonly runs: number;
  /** The children the session's delegation calls ran (and theirs), as their logs stand. */
  readonly children: readonly ChildLog[];
}

/** The part of `auditSession` (src/audit/audit-session.ts) the harness uses. */
type AuditSession = (options: {
  store: SessionStore;
  sessionId: string;
  profile?: ProviderProfile;
  client?: Client;
}) => Promise<{ ok: boolean; failures: readonly string[] }>;

const AUDIT_MODULE = fileURLToPath(new URL('../../../src/audit/audit-session.ts', import.meta.url));

interface TreeNode {
  readonly sessionId: string;
  readonly events: readonly SessionEvent[];
  readonly where: string;
}

export async function checkTrial(input: TrialCheckInput): Promise<TrialCheck> {
  const tally = new Tally();
  const count = (column: keyof TrialCounts, problem: string, where = '') => tally.count(column, problem, where);

  // ---- each log of the tree; each session's children found from its log and checked against it ----
  const storedSessions = (await input.store.list()).map((s) => s.sessionId);
  const tree: TreeNode[] = [{ sessionId: input.sessionId, events: input.events, where: '' }];
  const children: ChildLog[] = [];
  for (let i = 0; i < tree.length; i++) {
    const node = tree[i] as TreeNode;
    // A child accepted one message: its task, which its log must claim once like any followup.
    const acked: readonly AckedMessage[] =
      i === 0
        ? input.acked
        : [{ kind: 'followup', messageId: DELEGATED_TASK_MESSAGE_ID, via: 'its delegation', attempts: 1 }];
    checkLog(tally, { sessionId: node.sessionId, events: node.events, acked, where: node.where });
    const found = await checkChildren(tally, {
      parentId: node.sessionId,
      parentEvents: node.events,
      store: input.store,
      client: input.client,
      storedSessions,
      where: node.where,
    });
    children.push(...found);
    tree.push(...found.map((c) => ({ sessionId: c.sessionId, events: c.events, where: `child ${c.sessionId}: ` })));
  }

  // ---- tools: the non-idempotent ones ran at most once (run logs are shared by the whole tree) ----
  const toolRuns = new Map<string, number>();
  for (const id of input.toolRuns) toolRuns.set(id, (toolRuns.get(id) ?? 0) + 1);
  for (const [id, n] of toolRuns)
    if (n > 1 && !input.idempotentCall(id)) count('duplicated', `the non-idempotent tool call ${id} ran ${n} times`);

  // ---- the gate: every recorded digest re-derives; the provider got nothing the logs do not explain ----
  const explained = new Set<string>();
  const derivedBySession = new Map<string, string[]>();
  for (const node of tree) {
    const derived = await derivedBodies(node, input.profile, (problem) => count('gate', problem, node.where));
    derivedBySession.set(node.sessionId, derived);
    for (const body of derived) explained.add(body);
  }
  const unexplained = input.providerBodies.filter((body) => !explained.has(body));
  if (unexplained.length > 0)
    count('gate', `the provider received ${unexplained.length} bodies no log of the trial explains`);
  for (const node of tree) {
    // Each session's bodies in its log's order (children run in parallel, so theirs interleave); a request
    // retried after a kill arrives again right after itself.
    const derived = derivedBySession.get(node.sessionId) ?? [];
    const mine = new Set(derived);
    const arrived = input.providerBodies
      .filter((body) => mine.has(body))
      .filter((body, i, all) => i === 0 || body !== all[i - 1]);
    if (JSON.stringify(arrived) !== JSON.stringify(derived))
      count(
        'gate',
        `the provider received ${arrived.length} distinct bodies in order, the log derives ${derived.length}`,
        node.where,
      );
  }

  // ---- each history mirrors its log ----
  let runs = 0;
  for (const node of tree) {
    try {
      const mirror = await checkHistoryMirror(input.client, input.store, node.sessionId);
      if (node === tree[0]) runs = mirror.runs;
      if (!mirror.ok) count('mirror', mirror.problem ?? 'the history disagrees with the log', node.where);
    } catch (error) {
      count('mirror', `the mirror check could not run: ${(error as Error).message}`, node.where);
    }
  }

  // ---- each audit, where the audit exists (another part of the project) ----
  let audited = false;
  if (existsSync(AUDIT_MODULE)) {
    audited = true;
    // Loaded by path, typed here: this file must compile whether or not that module has landed.
    const { auditSession } = (await import(AUDIT_MODULE)) as { auditSession: AuditSession };
    for (const node of tree) {
      try {
        const report = await auditSession({
          store: input.store,
          sessionId: node.sessionId,
          profile: input.profile,
          client: input.client,
        });
        if (!report.ok) count('audit', report.failures.join('; '), node.where);
      } catch (error) {
        count('audit', `the audit could not run: ${(error as Error).message}`, node.where);
      }
    }
  }
  return {
    counts: tally.counts,
    problems: tally.problems,
    audited,
    turnErrors: tally.turnErrors,
    runs,
    children,
  };
}

/** The bodies a log says were sent (steps and compaction summaries), each recorded digest re-derived. */
async function derivedBodies(
  node: TreeNode,
  profile: ProviderProfile,
  problem: (text: string) => void,
): Promise<string[]> {
  const { sessionId, events } = node;
  const derived: string[] = [];
  for (const event of events) {
    try {
      if (event.type === 'request/sent') {
        const wire = await toWireBody(buildRequest(sessionId, events.slice(0, event.seq)), profile);
        if (wire.digest !== event.digest)
          problem(`step ${event.turn}.${event.step}: the recorded digest does not re-derive`);
        derived.push(wire.body);
      } else if (event.type === 'compact/summary') {
        const wire = await toWireBody(
          buildCompactionRequest(sessionId, events.slice(0, event.seq), event.maxTokens),
          profile,
        );
        if (wire.digest !== event.requestDigest)
          problem(`compaction ${event.compactionId}: the recorded digest does not re-derive`);
        derived.push(wire.body);
      }
    } catch (error) {
      problem(`seq ${event.seq}: the request cannot be derived: ${(error as Error).message}`);
    }
  }
  return derived;
}
