// A step's request for the web console: re-derived from the log (buildRequest → wire body), checked
// against the digest `request/sent` recorded, and compared with the previous step's request the way a
// provider's prefix cache sees it (the audit's prefix verdict, plus where and why the prefix broke).
import {
  deriveSentRequest,
  sentEvents,
  type DerivedRequest,
  type DeriveOptions,
} from '../audit/derive-sent-requests.js';
import { prefixVerdicts } from '../audit/prefix-stability.js';
import { canonicalJson } from '../core/canonical-json.js';
import { DhError, type SessionEvent } from '../core/index.js';
import type { RequestDiff, StepRequest } from './console-api.js';

export const STEP_NOT_FOUND = 'STEP_NOT_FOUND';
export const REQUEST_UNDERIVABLE = 'REQUEST_UNDERIVABLE';

export async function stepRequest(
  sessionId: string,
  events: readonly SessionEvent[],
  turn: number,
  step: number,
  options: DeriveOptions = {},
): Promise<StepRequest> {
  const sent = sentEvents(events);
  const index = sent.findIndex((e) => e.turn === turn && e.step === step);
  const target = sent[index];
  if (target === undefined) {
    throw new DhError(STEP_NOT_FOUND, `session "${sessionId}" sent no request at step ${turn}.${step}`, {
      sessionId,
    });
  }
  const current = await deriveSentRequest(sessionId, events, target, options);
  if (!current.wire || !current.request) {
    throw new DhError(
      REQUEST_UNDERIVABLE,
      `step ${turn}.${step}: the request cannot be derived: ${current.error ?? 'unknown'}`,
      { sessionId },
    );
  }
  const before = sent[index - 1];
  const previous = before !== undefined ? await deriveSentRequest(sessionId, events, before, options) : null;
  return {
    turn,
    step,
    body: JSON.parse(current.wire.body) as unknown,
    digest: current.wire.digest,
    recordedDigest: current.recordedDigest,
    verified: current.wire.digest === current.recordedDigest,
    diff: requestDiff(previous, current),
  };
}

/** How `current` relates to `previous` (both steps' derived requests). */
export function requestDiff(previous: DerivedRequest | null, current: DerivedRequest): RequestDiff {
  const messages = current.request?.messages.map((m) => canonicalJson(m)) ?? [];
  if (previous === null || !previous.request || !current.request) {
    return {
      previous: previous !== null ? { turn: previous.turn, step: previous.step } : null,
      commonPrefix: 0,
      appended: messages.length,
      prefixBrokeAt: null,
      reason: null,
      headerChanged: false,
    };
  }
  const earlier = previous.request.messages.map((m) => canonicalJson(m));
  let commonPrefix = 0;
  while (commonPrefix < earlier.length && earlier[commonPrefix] === messages[commonPrefix]) commonPrefix++;
  const headerParts = (['config', 'system', 'tools'] as const).filter(
    (part) => canonicalJson(previous.request?.[part] ?? null) !== canonicalJson(current.request?.[part] ?? null),
  );
  const headerChanged = headerParts.length > 0;
  const [, verdict] = prefixVerdicts([previous, current]);
  let prefixBrokeAt: number | null = null;
  let reason: string | null = null;
  if (headerChanged) {
    // System prompt, tools and config come before every message on the wire: the cached prefix is gone.
    prefixBrokeAt = 0;
    reason = `header change (${headerParts.join(', ')})${modelChange(previous, current)}`;
  } else if (commonPrefix < earlier.length) {
    prefixBrokeAt = commonPrefix;
    reason =
      current.replaces > previous.replaces
        ? `a surface replace (compaction) rewrote messages from ${commonPrefix}`
        : current.epoch !== previous.epoch
          ? `a new header snapshot (epoch ${current.epoch})`
          : (verdict?.problem ?? `messages[${commonPrefix}] changed`);
  }
  return {
    previous: { turn: previous.turn, step: previous.step },
    commonPrefix,
    appended: messages.length - commonPrefix,
    prefixBrokeAt,
    reason,
    headerChanged,
  };
}

function modelChange(previous: DerivedRequest, current: DerivedRequest): string {
  const before = previous.request?.config.model;
  const after = current.request?.config.model;
  return before !== after ? `: model ${before ?? '?'} → ${after ?? '?'}` : '';
}
