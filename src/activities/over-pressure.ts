// Context pressure: whether the next request would use more than a fraction of the model's context
// window (the one the header in force records), decided before anything of the step is logged (the
// workflow then compacts and asks again).
import { deriveEventMessages, estimateTokens, type Session } from '../core/index.js';
import type { ClaimedMessage } from '../plugins/contracts.js';
import { headerContextWindow } from './context-window.js';
import type { SessionRuntime } from './session-runtime.js';

/**
 * Calibrated by the provider: the last response's reported prompt + output tokens, plus an estimate of
 * what was appended since (and the batch about to be claimed). Without a usable report (none yet, or a
 * compaction since) the whole request is estimated.
 */
export function overPressure(
  runtime: SessionRuntime,
  session: Session,
  batch: readonly ClaimedMessage[],
  threshold: number,
): boolean {
  const header = session.requestHeader();
  if (!header) return false;
  const window = headerContextWindow(runtime, header);
  if (window === undefined) return false;
  const claimed = estimateTokens(batch.map((m) => ({ role: 'user' as const, content: m.content })));
  const events = session.events;
  let reported = -1;
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (e?.type === 'surface/replace' || e?.type === 'request/header') break; // the report no longer describes the request
    if (e?.type === 'assistant/message' && e.usage) {
      const since = events.slice(i + 1).flatMap((x) => deriveEventMessages(x));
      reported = e.usage.inputUncached + e.usage.cacheRead + e.usage.output + e.usage.reasoning + estimateTokens(since);
      break;
    }
  }
  const tokens =
    reported >= 0
      ? reported + claimed
      : estimateTokens([...(header.prefix ?? []), ...session.deriveMessages()]) +
        Math.ceil(JSON.stringify([header.system ?? '', header.tools ?? []]).length / 4) +
        claimed;
  return tokens >= threshold * window;
}
