// Prefix stability over a session's sent requests: within one header epoch and between surface
// replaces, each step's request messages must start with the previous step's, byte for byte (per-message
// canonical JSON), so provider prefix caches can hit. Compaction summary requests are not steps: they
// are neither compared nor break a pair.
import { canonicalJson } from '../core/canonical-json.js';
import type { DerivedRequest } from './derive-sent-requests.js';

export interface PrefixVerdict {
  /** null when there is nothing to compare with (first request of an epoch, after a replace, underivable). */
  readonly extends: boolean | null;
  /** Where the request stopped extending the previous one, e.g. `messages[3] changed`. */
  readonly problem: string | null;
}

export interface PrefixSummary {
  /** Consecutive pairs in the same epoch and replace generation that could be compared. */
  readonly pairs: number;
  readonly extended: number;
  /** extended / pairs; null when there are no pairs. */
  readonly ratio: number | null;
  /** `T.S` of the steps whose request did not extend the previous one. */
  readonly broken: readonly string[];
}

export function prefixVerdicts(steps: readonly DerivedRequest[]): PrefixVerdict[] {
  let previous: DerivedRequest | undefined;
  return steps.map((current) => {
    if (current.kind === 'compaction') return { extends: null, problem: null };
    const verdict = compare(previous, current);
    previous = current;
    return verdict;
  });
}

function compare(previous: DerivedRequest | undefined, current: DerivedRequest): PrefixVerdict {
  if (!previous?.request || !current.request) return { extends: null, problem: null };
  if (previous.epoch !== current.epoch || previous.replaces !== current.replaces) {
    return { extends: null, problem: null };
  }
  const before = previous.request.messages.map((m) => canonicalJson(m));
  const after = current.request.messages.map((m) => canonicalJson(m));
  if (after.length < before.length) {
    return { extends: false, problem: `${after.length} messages, the previous request had ${before.length}` };
  }
  const changed = before.findIndex((text, index) => after[index] !== text);
  if (changed >= 0) return { extends: false, problem: `messages[${changed}] changed` };
  return { extends: true, problem: null };
}

export function summarizePrefix(steps: readonly DerivedRequest[], verdicts: readonly PrefixVerdict[]): PrefixSummary {
  let pairs = 0;
  let extended = 0;
  const broken: string[] = [];
  verdicts.forEach((verdict, i) => {
    if (verdict.extends === null) return;
    pairs++;
    if (verdict.extends) extended++;
    else broken.push(steps[i]?.id ?? '?');
  });
  return { pairs, extended, ratio: pairs === 0 ? null : extended / pairs, broken };
}
