// The audit of one session, as a library function (the `dh audit` command and the tests call it): the
// log loads and validates, its hash chain (and MACs) verify, every sent request re-derives to its recorded
// digest, requests stay prefix-stable, cache reads match, (with a client) the history mirrors the log, and
// its links to its subagents hold both ways; each subagent is audited the same way, recursively.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { PayloadCodecError, PayloadCodecErrorCode } from '../codec/aes-gcm-codec.js';
import type { SessionEvent } from '../core/events.js';
import { Session } from '../core/session.js';
import { checkHistoryMirror, type MirrorReport } from '../client/history-mirror.js';
import type { ProviderProfile } from '../providers/provider-profiles.js';
import type { ReadAttachment } from '../providers/wire-body.js';
import type { PrefixCacheMode } from '../providers/prefix-cache.js';
import type { LogKey } from '../stores/log-key.js';
import type { SessionStore } from '../stores/session-store.js';
import { childrenByParent } from '../stores/delegated-sessions.js';
import { auditChain, type ChainCheck } from './audit-chain.js';
import { auditCosts, type CostCheck } from './audit-costs.js';
import { auditAgent, type AgentCheck } from './audit-agent.js';
import {
  auditDelegations,
  auditParentLink,
  type ChildrenIndex,
  type ParentLink,
  type SubagentCheck,
} from './audit-delegations.js';
import { delegationOf, descendantIdPrefix } from '../core/delegation.js';
import type { AuditProfileSource } from './audit-profile.js';
import { deriveSentRequests } from './derive-sent-requests.js';
import { expectedCacheReads } from './expected-cache-reads.js';
import { prefixVerdicts, summarizePrefix, type PrefixSummary } from './prefix-stability.js';

export interface AuditOptions {
  readonly store: SessionStore;
  readonly sessionId: string;
  /** The worker's profile, when at hand; requests of other providers use built-in or generic profiles. */
  readonly profile?: ProviderProfile;
  /**
   * When given, the workflow history is checked against the log (checkHistoryMirror). An encrypted history
   * this client has no key for throws PAYLOAD_KEY_MISSING (or PAYLOAD_KEY_UNKNOWN for another key).
   */
  readonly client?: Client;
  /** Reads image attachments of requests that carry images. */
  readonly readAttachment?: ReadAttachment;
  /** DH_LOG_KEY: every row's MAC must verify under it. Without it the chain is checked, not the MACs. */
  readonly logKey?: LogKey;
}

/** One row per recorded request: each `request/sent` (a step) and each `compact/summary` or `compact/refused` (a compaction). */
export interface AuditStepRow {
  readonly kind: 'step' | 'compaction';
  /** The step (for a compaction, the last step before it). */
  readonly turn: number;
  readonly step: number;
  /** `T.S` for a step, `compact:<compactionId>` for a compaction. */
  readonly id: string;
  readonly sentSeq: number;
  /** Header epoch (number of header snapshots before the request). */
  readonly epoch: number;
  readonly provider: string | null;
  readonly model: string | null;
  readonly profileSource: AuditProfileSource | null;
  /** The model's context window the request ran against: the header's record, else the audit profile's. */
  readonly contextWindow: number | null;
  /** Messages in the wire body (the system prompt included). */
  readonly messages: number | null;
  readonly recordedDigest: string;
  readonly derivedDigest: string | null;
  readonly bytes: number | null;
  readonly digestOk: boolean;
  /** Why the request could not be derived. */
  readonly error: string | null;
  /** null when not comparable (first request of an epoch, after a surface replace, or underivable). */
  readonly prefixExtends: boolean | null;
  readonly prefixProblem: string | null;
  readonly cacheMode: PrefixCacheMode | null;
  readonly promptTokens: number | null;
  readonly expectedCacheRead: number | null;
  readonly reportedCacheRead: number | null;
}

export type MirrorCheck =
  | { readonly status: 'ok' | 'mismatch'; readonly report: MirrorReport }
  /** The session has no workflow on this Temporal server (an imported or offline-written log). */
  | { readonly status: 'no-workflow'; readonly problem: string }
  | { readonly status: 'error'; readonly problem: string };

export interface AuditSummary {
  readonly events: number;
  readonly turns: number;
  readonly steps: number;
  /** Every event loaded and passed its schema, key and digest checks. */
  readonly log: { readonly ok: boolean; readonly problem: string | null };
  /** The events form a structurally valid log (a `Session` accepts them). */
  readonly structure: { readonly ok: boolean; readonly problem: string | null };
  /** The hash chain (and, with a key, the MACs); null when the log did not load. */
  readonly chain: ChainCheck | null;
  readonly digests: {
    readonly ok: number;
    /** Ids (`T.S`, `compact:<id>`) of requests whose re-derived digest differs from the recorded one. */
    readonly mismatched: readonly string[];
    /** Ids of requests that could not be derived at all. */
    readonly underivable: readonly string[];
  };
  readonly prefix: PrefixSummary;
  readonly cache: {
    /** Sums over the compared requests only. */
    readonly expected: number;
    readonly reported: number;
    /** Steps with both an expectation and a reported count. */
    readonly compared: number;
    /** `T.S` of compared steps where the two differ (informational: see expectedCacheReads). */
    readonly differing: readonly string[];
  };
  /** null when no Temporal client was given. */
  readonly mirror: MirrorCheck | null;
  /** One per delegation call that names a child (see audit-delegations.ts). */
  readonly subagents: readonly SubagentCheck[];
  /** A subagent audited on its own (not from its parent's audit): its parent's link to it. */
  readonly parentLink: ParentLink | null;
  /** The answers' logged costs, re-derived from their usage and price. */
  readonly cost: CostCheck;
  /** The agent the log names and its headers' agent records; null for a log that names none (format 1). */
  readonly agent: AgentCheck | null;
}

export interface AuditReport {
  readonly sessionId: string;
  /**
   * False on an invalid log, any digest mismatch or underivable request, a mirror disagreement, a broken
   * link to a subagent, or a subagent whose own audit fails.
   */
  readonly ok: boolean;
  /** Why `ok` is false, one line each (a subagent's own failures prefixed `subagent <id>: `). */
  readonly failures: readonly string[];
  readonly rows: readonly AuditStepRow[];
  readonly summary: AuditSummary;
  /** The audits of the subagents whose logs it links to (each once, in link order). */
  readonly children: readonly AuditReport[];
}

/** What the audits of one tree share: the store's subagents by parent (read once), the sessions audited. */
interface TreeContext {
  /** The session the audit was asked for. */
  readonly root: string;
  readonly index: ChildrenIndex;
  readonly audited: Set<string>;
}

export async function auditSession(options: AuditOptions): Promise<AuditReport> {
  const tree: TreeContext = {
    root: options.sessionId,
    // Subagent ids extend their parent's, so only the logs of ids that could be in this tree are read.
    index: await childrenByParent(options.store, (id) => id.startsWith(descendantIdPrefix(options.sessionId))),
    audited: new Set([options.sessionId]),
  };
  return auditOne(options, tree);
}

async function auditOne(options: AuditOptions, tree: TreeContext): Promise<AuditReport> {
  const { store, sessionId } = options;
  const failures: string[] = [];
  let events: SessionEvent[] = [];
  let log: AuditSummary['log'] = { ok: true, problem: null };
  try {
    events = await store.read(sessionId);
  } catch (error) {
    // An unknown session is a usage error, not an audit finding.
    if (isCode(error, 'SESSION_NOT_FOUND')) throw error;
    log = { ok: false, problem: messageOf(error) };
    failures.push(`log: ${log.problem}`);
  }

  let chain: ChainCheck | null = null;
  if (log.ok) {
    chain = await auditChain(store, sessionId, events, options.logKey);
    if (chain.broken !== null) failures.push(`chain: seq ${chain.broken.seq}: ${chain.broken.problem}`);
  }

  let structure: AuditSummary['structure'] = { ok: log.ok, problem: log.ok ? null : 'the log did not load' };
  if (log.ok) {
    try {
      new Session(sessionId, events);
      if (events.length === 0) throw new Error('the log is empty');
    } catch (error) {
      structure = { ok: false, problem: messageOf(error) };
      failures.push(`structure: ${structure.problem}`);
    }
  }

  const derived = await deriveSentRequests(sessionId, events, {
    ...(options.profile !== undefined ? { profile: options.profile } : {}),
    ...(options.readAttachment !== undefined ? { readAttachment: options.readAttachment } : {}),
  });
  const verdicts = prefixVerdicts(derived);
  const cache = expectedCacheReads(events, derived);
  const rows: AuditStepRow[] = derived.map((step, i) => ({
    kind: step.kind,
    turn: step.turn,
    step: step.step,
    id: step.id,
    sentSeq: step.sentSeq,
    epoch: step.epoch,
    provider: step.request?.config.provider ?? null,
    model: step.request?.config.model ?? null,
    profileSource: step.profile?.source ?? null,
    contextWindow: step.profile?.contextWindow ?? null,
    messages: step.request ? step.request.messages.length + (step.request.system !== undefined ? 1 : 0) : null,
    recordedDigest: step.recordedDigest,
    derivedDigest: step.wire?.digest ?? null,
    bytes: step.wire?.bytes ?? null,
    digestOk: step.digestOk,
    error: step.error,
    prefixExtends: verdicts[i]?.extends ?? null,
    prefixProblem: verdicts[i]?.problem ?? null,
    cacheMode: cache[i]?.mode ?? null,
    promptTokens: cache[i]?.promptTokens ?? null,
    expectedCacheRead: cache[i]?.expected ?? null,
    reportedCacheRead: cache[i]?.reported ?? null,
  }));

  const underivable = rows.filter((r) => r.error !== null).map((r) => r.id);
  const mismatched = rows.filter((r) => r.error === null && !r.digestOk).map((r) => r.id);
  for (const row of rows) {
    const what = row.kind === 'step' ? `step ${row.id}` : `compaction ${row.id.slice('compact:'.length)}`;
    if (row.error !== null) failures.push(`${what}: the request cannot be derived: ${row.error}`);
    else if (!row.digestOk) {
      failures.push(
        `${what}: the re-derived request has digest ${row.derivedDigest}, the log recorded ${row.recordedDigest}`,
      );
    }
  }

  const agent = log.ok ? auditAgent(events) : null;
  for (const problem of agent?.problems ?? []) failures.push(`agent: ${problem}`);

  const cost = auditCosts(events);
  for (const id of cost.mismatched) failures.push(`step ${id}: the logged cost is not its usage at its logged price`);

  const compared = rows.filter((r) => r.expectedCacheRead !== null && r.reportedCacheRead !== null);
  let mirror: MirrorCheck | null = null;
  if (options.client && log.ok) {
    mirror = await mirrorCheck(options.client, store, sessionId);
    if (mirror.status === 'mismatch') failures.push(`history mirror: ${mirror.report.problem ?? 'disagrees'}`);
    if (mirror.status === 'error') failures.push(`history mirror: ${mirror.problem}`);
  }

  const links = log.ok ? await auditDelegations(store, sessionId, events, tree.index) : { checks: [], failures: [] };
  failures.push(...links.failures);
  // Reached from its parent's audit, a subagent's link up was checked from the parent's side.
  const delegation = log.ok && sessionId === tree.root ? delegationOf(events) : undefined;
  const parentLink = delegation ? await auditParentLink(store, sessionId, delegation) : null;
  if (parentLink?.problem) failures.push(parentLink.problem);
  const children: AuditReport[] = [];
  for (const check of links.checks) {
    if (!check.childLog || tree.audited.has(check.childSessionId)) continue;
    tree.audited.add(check.childSessionId);
    const child = await auditOne({ ...options, sessionId: check.childSessionId }, tree);
    children.push(child);
    failures.push(...child.failures.map((f) => `subagent ${child.sessionId}: ${f}`));
  }

  return {
    sessionId,
    ok: failures.length === 0,
    failures,
    rows,
    children,
    summary: {
      events: events.length,
      turns: events.filter((e) => e.type === 'turn/start').length,
      steps: events.filter((e) => e.type === 'step/start').length,
      log,
      structure,
      chain,
      digests: { ok: rows.filter((r) => r.digestOk).length, mismatched, underivable },
      prefix: summarizePrefix(derived, verdicts),
      cache: {
        expected: sum(compared.map((r) => r.expectedCacheRead)),
        reported: sum(compared.map((r) => r.reportedCacheRead)),
        compared: compared.length,
        differing: compared.filter((r) => r.expectedCacheRead !== r.reportedCacheRead).map((r) => r.id),
      },
      mirror,
      subagents: links.checks,
      parentLink,
      cost,
      agent,
    },
  };
}

async function mirrorCheck(client: Client, store: SessionStore, sessionId: string): Promise<MirrorCheck> {
  try {
    const report = await checkHistoryMirror(client, store, sessionId);
    return { status: report.ok ? 'ok' : 'mismatch', report };
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) {
      return { status: 'no-workflow', problem: `no workflow for session "${sessionId}" on this Temporal server` };
    }
    // A missing or other payload key is how this audit is configured, not a finding about the session.
    if (error instanceof PayloadCodecError && KEY_PROBLEMS.has(error.code)) {
      throw new PayloadCodecError(
        error.code,
        `the history mirror cannot be checked: ${error.message} (\`dh audit --no-mirror\` checks the log alone)`,
        error.details,
        { cause: error },
      );
    }
    return { status: 'error', problem: `the check could not run: ${messageOf(error)}` };
  }
}

/** Payload-key errors of the mirror check that audit raises instead of reporting (see mirrorCheck). */
const KEY_PROBLEMS: ReadonlySet<string> = new Set([PayloadCodecErrorCode.MissingKey, PayloadCodecErrorCode.UnknownKey]);

function sum(values: readonly (number | null)[]): number {
  return values.reduce<number>((total, v) => total + (v ?? 0), 0);
}

function isCode(error: unknown, code: string): boolean {
  return error !== null && typeof error === 'object' && 'code' in error && error.code === code;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
