// Expected cache-read tokens per sent request: the re-derived wire bodies fed, in log order, through the
// prefix-cache simulator (src/providers/prefix-cache.ts: DeepSeek's or OpenAI's published rules over a real
// tokenizer; the scripted provider plays the same one), each followed by the answer the log holds for its
// step. Compaction summary requests go through the same cache in their place in the log (the provider saw
// them there too).
import type { EventOf, SessionEvent } from '../core/events.js';
import { ChatCompletionRequest } from '../providers/chat-completion-request.js';
import { canonicalInput, canonicalOutput, PrefixCache, type PrefixCacheMode } from '../providers/prefix-cache.js';
import { cacheModeFor } from './audit-profile.js';
import type { DerivedRequest } from './derive-sent-requests.js';

export interface CacheExpectation {
  readonly mode: PrefixCacheMode | null;
  /** Input tokens of the request in the simulator's canonical tokenization. */
  readonly promptTokens: number | null;
  readonly expected: number | null;
  /** `assistant/message.usage.cacheRead` of the step, when the provider reported usage. */
  readonly reported: number | null;
}

/**
 * The simulation is the upper bound a client can reach (it persists at once and never evicts). It sees
 * only what the log holds: a provider call repeated after a crash, or the full answer to a stream the
 * client cut (an interrupted message feeds no output), can make a real provider report more or less.
 */
export function expectedCacheReads(
  events: readonly SessionEvent[],
  steps: readonly DerivedRequest[],
): CacheExpectation[] {
  const answers = new Map<string, EventOf<'assistant/message'>>();
  const summaries = new Map<number, EventOf<'compact/summary'>>();
  for (const event of events) {
    if (event.type === 'assistant/message') answers.set(`${event.turn}.${event.step}`, event);
    if (event.type === 'compact/summary') summaries.set(event.seq, event);
  }
  const caches = new Map<PrefixCacheMode, PrefixCache>();
  return steps.map((step) => {
    // A summary's text is logged trimmed and prefixed, not as the model wrote it: no output is fed.
    const answer = step.kind === 'step' ? answers.get(step.id) : undefined;
    const reported =
      step.kind === 'step'
        ? (answer?.usage?.cacheRead ?? null)
        : (summaries.get(step.sentSeq)?.usage?.cacheRead ?? null);
    if (!step.request || !step.wire) return { mode: null, promptTokens: null, expected: null, reported };
    const mode = cacheModeFor(step.request.config);
    let cache = caches.get(mode);
    if (!cache) {
      cache = new PrefixCache(mode);
      caches.set(mode, cache);
    }
    const parsed = ChatCompletionRequest.safeParse(JSON.parse(step.wire.body));
    if (!parsed.success) return { mode, promptTokens: null, expected: null, reported };
    const output =
      answer && answer.interrupted !== true
        ? canonicalOutput({
            content: answer.content ?? '',
            reasoning: answer.reasoning,
            toolCalls: answer.toolCalls,
          })
        : undefined;
    const lookup = cache.process(canonicalInput(parsed.data), output);
    return { mode, promptTokens: lookup.promptTokens, expected: lookup.hitTokens, reported };
  });
}
