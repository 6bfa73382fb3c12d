// Re-derives every request a session's log says was sent: for each `request/sent` (a step) and each
// `compact/summary` or `compact/refused` (a compaction's summary request), the request the log before it builds, its wire
// body and digest, compared with what was recorded. Shared by the audit, `dh replay` and `dh show --step`.
import { buildRequest, type BuiltRequest } from '../core/build-request.js';
import { buildCompactionRequest } from '../core/compaction.js';
import { foldRequestHeader } from '../core/fold-request-header.js';
import { modelEntry } from '../config/worker-profile.js';
import type { EventOf, SessionEvent } from '../core/events.js';
import { toWireBody, type ReadAttachment, type WireBody } from '../providers/wire-body.js';
import type { ProviderProfile } from '../providers/provider-profiles.js';
import { auditProfileFor, type AuditProfileSource } from './audit-profile.js';

export interface DerivedRequest {
  /** A step's model request, or a compaction's summary request. */
  readonly kind: 'step' | 'compaction';
  /** The step (for a compaction: the last step before it; 0.0 when underivable). */
  readonly turn: number;
  readonly step: number;
  /** `T.S` for a step, `compact:<compactionId>` for a compaction. */
  readonly id: string;
  /** Seq of the `request/sent` (or `compact/summary` / `compact/refused`) event; the request is built from the events before it. */
  readonly sentSeq: number;
  readonly recordedDigest: string;
  readonly recordedBytes: number;
  /** Header snapshots logged before the request (a new snapshot starts a new epoch). */
  readonly epoch: number;
  /** Surface replaces logged before the request. */
  readonly replaces: number;
  readonly request: BuiltRequest | null;
  readonly wire: WireBody | null;
  /** The profile derived with, and the window of the request's model on it (the header's when recorded). */
  readonly profile: {
    readonly name: string;
    readonly source: AuditProfileSource;
    readonly contextWindow: number | null;
  } | null;
  /** Why the request or its body could not be derived. */
  readonly error: string | null;
  /** The derived digest equals the recorded one (false when underivable). */
  readonly digestOk: boolean;
}

export interface DeriveOptions {
  /** Used for requests whose header names this profile; otherwise built-in or generic (see auditProfileFor). */
  readonly profile?: ProviderProfile;
  /** Reads image attachments; without it a request carrying images cannot be derived. */
  readonly readAttachment?: ReadAttachment;
}

export type RecordedRequestEvent = EventOf<'request/sent'> | EventOf<'compact/summary'> | EventOf<'compact/refused'>;

/** The `request/sent` events of a log, in order. */
export function sentEvents(events: readonly SessionEvent[]): EventOf<'request/sent'>[] {
  return events.filter((e): e is EventOf<'request/sent'> => e.type === 'request/sent');
}

/** Every event that records a model request (steps and compaction summaries, refused ones too), in log order. */
export function recordedRequestEvents(events: readonly SessionEvent[]): RecordedRequestEvent[] {
  return events.filter(
    (e): e is RecordedRequestEvent =>
      e.type === 'request/sent' || e.type === 'compact/summary' || e.type === 'compact/refused',
  );
}

/**
 * Derives one request: `buildRequest(id, events.slice(0, sent.seq))` (or, for a compaction summary,
 * `buildCompactionRequest` over the same prefix with its recorded `maxTokens`) → `toWireBody` → digest.
 */
export async function deriveSentRequest(
  sessionId: string,
  events: readonly SessionEvent[],
  sent: RecordedRequestEvent,
  options: DeriveOptions = {},
): Promise<DerivedRequest> {
  const before = events.slice(0, sent.seq);
  const common = {
    sentSeq: sent.seq,
    epoch: before.filter((e) => e.type === 'request/header').length,
    replaces: before.filter((e) => e.type === 'surface/replace').length,
  };
  const base =
    sent.type === 'request/sent'
      ? {
          ...common,
          kind: 'step' as const,
          turn: sent.turn,
          step: sent.step,
          id: `${sent.turn}.${sent.step}`,
          recordedDigest: sent.digest,
          recordedBytes: sent.bytes,
        }
      : {
          ...common,
          kind: 'compaction' as const,
          turn: 0,
          step: 0,
          id: `compact:${sent.compactionId}`,
          recordedDigest: sent.requestDigest,
          recordedBytes: sent.requestBytes,
        };
  let request: BuiltRequest | null = null;
  let profile: DerivedRequest['profile'] = null;
  try {
    if (sent.type === 'request/sent') {
      request = buildRequest(sessionId, before);
      if (request.turn !== sent.turn || request.step !== sent.step) {
        throw new Error(`the log before seq ${sent.seq} builds step ${request.turn}.${request.step}, not ${base.id}`);
      }
    } else {
      request = buildCompactionRequest(sessionId, before, sent.maxTokens);
      base.turn = request.turn;
      base.step = request.step;
    }
    const resolved = auditProfileFor(request.config, options.profile, foldRequestHeader(before)?.contextWindow);
    profile = {
      name: resolved.profile.name,
      source: resolved.source,
      contextWindow: modelEntry(resolved.profile, request.config.model)?.contextWindow ?? null,
    };
    const wire = await toWireBody(request, resolved.profile, options.readAttachment);
    return { ...base, request, wire, profile, error: null, digestOk: wire.digest === base.recordedDigest };
  } catch (error) {
    return {
      ...base,
      request,
      wire: null,
      profile,
      error: error instanceof Error ? error.message : String(error),
      digestOk: false,
    };
  }
}

/** Derives every recorded request of a log (steps and compaction summaries), in log order. */
export async function deriveSentRequests(
  sessionId: string,
  events: readonly SessionEvent[],
  options: DeriveOptions = {},
): Promise<DerivedRequest[]> {
  const out: DerivedRequest[] = [];
  for (const sent of recordedRequestEvents(events)) out.push(await deriveSentRequest(sessionId, events, sent, options));
  return out;
}
