// Proves that a session's workflow history mirrors its log: every append activity's result carries
// (seq, type, digest) receipts, the last with the store's chain head; collected over every run of the
// session, they must agree with the store (histories recorded before the chain carry no chain digests).
import { defaultPayloadConverter } from '@temporalio/common';
import { refuseSealed } from '../codec/aes-gcm-codec.js';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { nativeEventDigest } from '../stores/native-sha256.js';
import type { SessionStore } from '../stores/session-store.js';
import type { Receipt } from '../shared/activity-contracts.js';
import { sessionWorkflowId } from '../shared/session-messages.js';

export interface MirrorReport {
  readonly ok: boolean;
  readonly runs: number;
  readonly receipts: number;
  /** Receipts whose chain digest was compared with the store's (histories recorded before the chain have none). */
  readonly chains: number;
  /** Stored events no run's history mentions, from seq 0 (a fork seed copied by a client, or a log older than its runs). */
  readonly uncoveredPrefix: number;
  /** The first disagreement, when not ok. */
  readonly problem: string | null;
}

export interface MirrorOptions {
  /**
   * How long the newest events of a running session may take to reach its history (default 10 s). An append
   * commits in the store before its activity's result is recorded, so a check right after it finds a tail no
   * history mentions yet; it is checked again until the history has it or this passes (then it is a problem).
   */
  readonly settleMs?: number;
}

const SETTLE_MS = 10_000;
const SETTLE_POLL_MS = 200;

export async function checkHistoryMirror(
  client: Client,
  store: SessionStore,
  sessionId: string,
  options: MirrorOptions = {},
): Promise<MirrorReport> {
  const deadline = Date.now() + (options.settleMs ?? SETTLE_MS);
  for (;;) {
    const { report, tailInFlight } = await mirrorOnce(client, store, sessionId);
    if (!tailInFlight || Date.now() >= deadline) return report;
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
  }
}

async function mirrorOnce(
  client: Client,
  store: SessionStore,
  sessionId: string,
): Promise<{ report: MirrorReport; tailInFlight: boolean }> {
  const workflowId = sessionWorkflowId(sessionId);
  const { payloadCodecs } = client.options.loadedDataConverter;
  const runIds = new Set<string>();
  for await (const execution of client.workflow.list({ query: `WorkflowId = "${workflowId}"` }))
    runIds.add(execution.runId);
  // Visibility lags; the continue-as-new chain of the newest run is authoritative for what it reaches.
  const newest = await client.workflow.getHandle(workflowId).describe();
  let cursor: string | undefined = newest.runId;
  const receipts = new Map<number, Receipt>();
  let problem: string | null = null;
  const visited = new Set<string>();
  const queue = [...runIds];
  if (cursor) queue.unshift(cursor);
  while (queue.length > 0) {
    const runId = queue.shift() as string;
    if (visited.has(runId)) continue;
    visited.add(runId);
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    for (const event of history.events ?? []) {
      const previous = event.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
      if (previous) queue.push(previous);
      // An activity's result, or a local activity's (openSession), which the history keeps in a marker.
      let payloads =
        (event.activityTaskCompletedEventAttributes?.result ?? localActivityResult(event))?.payloads?.slice(0, 1) ?? [];
      if (payloads.length === 0) continue;
      // History holds payloads as the worker's codecs left them (e.g. encrypted): decode, last codec first.
      for (const codec of [...payloadCodecs].reverse()) payloads = await codec.decode(payloads);
      const payload = payloads[0];
      if (!payload) continue;
      // Without the workers' key the result is still ciphertext: say which variable, not "unknown encoding".
      refuseSealed(payload, `the workflow history of session "${sessionId}"`);
      const result = defaultPayloadConverter.fromPayload<{ receipts?: Receipt[] }>(payload);
      for (const receipt of result?.receipts ?? []) {
        const seen = receipts.get(receipt.seq);
        if (seen && (seen.digest !== receipt.digest || seen.type !== receipt.type)) {
          problem ??= `seq ${receipt.seq}: two runs recorded different events (${seen.type} ${seen.digest} vs ${receipt.type} ${receipt.digest})`;
        }
        if (seen?.chain !== undefined && receipt.chain !== undefined && seen.chain !== receipt.chain) {
          problem ??= `seq ${receipt.seq}: two runs recorded different chain digests (${seen.chain} vs ${receipt.chain})`;
        }
        // Only the last receipt of an outcome carries the chain: keep one a later receipt lacks.
        const chain = receipt.chain ?? seen?.chain;
        receipts.set(receipt.seq, chain !== undefined ? { ...receipt, chain } : receipt);
      }
    }
    cursor = undefined;
  }
  const events = await store.read(sessionId);
  let uncoveredPrefix = 0;
  while (uncoveredPrefix < events.length && !receipts.has(uncoveredPrefix)) uncoveredPrefix++;
  let firstUnrecorded: number | null = null;
  for (const event of events.slice(uncoveredPrefix)) {
    const receipt = receipts.get(event.seq);
    const digest = nativeEventDigest(event);
    if (!receipt) {
      if (problem === null) firstUnrecorded = event.seq;
      problem ??= `seq ${event.seq} (${event.type}) is in the log but in no workflow history`;
    } else if (receipt.type !== event.type || receipt.digest !== digest) {
      problem ??= `seq ${event.seq}: the history recorded ${receipt.type} ${receipt.digest}, the log holds ${event.type} ${digest}`;
    }
  }
  const chains = await chainCheck(store, sessionId, events.length, receipts);
  problem ??= chains.problem;
  const beyond = [...receipts.keys()].filter((seq) => seq >= events.length).sort((a, b) => a - b)[0];
  if (beyond !== undefined) problem ??= `seq ${beyond} is in the workflow history but not in the log`;
  // Only unrecorded events after every recorded one, of a run still going, can be an append in flight.
  let lastRecorded = -1;
  for (const seq of receipts.keys()) lastRecorded = Math.max(lastRecorded, seq);
  const tailInFlight = newest.status.name === 'RUNNING' && firstUnrecorded !== null && firstUnrecorded > lastRecorded;
  return {
    report: {
      ok: problem === null,
      runs: visited.size,
      receipts: receipts.size,
      chains: chains.checked,
      uncoveredPrefix,
      problem,
    },
    tailInFlight,
  };
}

/**
 * The first receipt whose chain digest is not the store's for its row: the stored chain was recomputed
 * (rows rewritten and re-linked), which the chain alone cannot show without DH_LOG_KEY. The break lies at
 * or before that seq, after the last one that agreed.
 */
async function chainCheck(
  store: SessionStore,
  sessionId: string,
  head: number,
  receipts: ReadonlyMap<number, Receipt>,
): Promise<{ checked: number; problem: string | null }> {
  const recorded = [...receipts.values()]
    .filter((r): r is Receipt & { chain: string } => r.chain !== undefined && r.seq < head)
    .sort((a, b) => a.seq - b.seq);
  if (recorded.length === 0) return { checked: 0, problem: null };
  const { links } = await store.readChain(sessionId, 0, head);
  let agreed: number | null = null;
  for (const receipt of recorded) {
    const stored = links[receipt.seq];
    if (stored?.seq === receipt.seq && stored.chain === receipt.chain) {
      agreed = receipt.seq;
      continue;
    }
    return {
      checked: recorded.length,
      problem:
        `seq ${receipt.seq}: the history recorded chain digest ${receipt.chain}, the store holds ${stored?.chain ?? 'none'}` +
        ` (the log was rewritten at or before seq ${receipt.seq}${agreed !== null ? `, after seq ${agreed}` : ''})`,
    };
  }
  return { checked: recorded.length, problem: null };
}

/** The result payloads of a local activity's marker (the SDK records one marker per local activity). */
function localActivityResult(event: temporal.api.history.v1.IHistoryEvent) {
  const marker = event.markerRecordedEventAttributes;
  return marker?.markerName === 'core_local_activity' ? marker.details?.result : undefined;
}
