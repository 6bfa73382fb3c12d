// compact: one compaction, logged as compact/start … compact/end. A summary replaces the surface before
// the most recent turns, produced by a request that is the next step's request plus an instruction (a
// cache hit on the shared prefix); `prune` replaces large old tool outputs by stubs, without a model. A
// summary request too long for the model drops those turns from the surface instead.
import { CancelledFailure } from '@temporalio/activity';
import {
  buildCompactionRequest,
  compactionRange,
  ErrorCode,
  estimateTokens,
  firstDifference,
  InvariantError,
  pruneReplacements,
  SUMMARY_PREFIX,
  type EventDraft,
} from '../core/index.js';
import { ProviderError, ProviderErrorCode } from '../providers/provider-error.js';
import { toWireBody } from '../providers/wire-body.js';
import type { CompactInput, CompactOutcome } from '../shared/activity-contracts.js';
import type { ActivityContext } from './activity-context.js';
import { callModelObserved } from './call-model-observed.js';
import { failpoint } from './failpoints.js';
import { ingressDrafts } from './inbox-drafts.js';

/** What replaces turns that could not be summarized because the summary request did not fit either. */
export function omittedNotice(messages: number): string {
  return (
    `[${messages} earlier messages were removed from this conversation: they no longer fit the model's ` +
    'context window, and a summary of them did not fit either. Ask the user if you need what they said.]'
  );
}

/** Output budget of a summary request. */
const SUMMARY_MAX_TOKENS = 2048;

/** Idempotent per compaction id: a retry resumes or returns. */
export async function compact(context: ActivityContext, input: CompactInput): Promise<CompactOutcome> {
  const { cache, runtime } = context;
  return context.guarded(input.sessionId, async () => {
    const { sessionId, compactionId } = input;
    let session = await cache.load(sessionId);
    session = await cache.append(session, ingressDrafts(session, input.ingress));
    const done = session.events.find((e) => e.type === 'compact/end' && e.compactionId === compactionId);
    const before = estimateTokens(session.deriveMessages());
    const finish = async (result: 'applied' | 'abandoned'): Promise<CompactOutcome> => ({
      ...(await context.outcome(session, input.knownHead)),
      outcome: result,
      tokensBefore: before,
      tokensAfter: estimateTokens(session.deriveMessages()),
    });
    if (done?.type === 'compact/end') return finish(done.outcome);
    const started = session.state.openCompaction === compactionId;
    // Nothing to do leaves no trace: compact/start is only written when there is something to apply.
    const stubs =
      input.trigger === 'prune' ? pruneReplacements(session.events, input.keepRecentTurns, input.pruneMinChars) : [];
    const range = input.trigger === 'prune' ? null : compactionRange(session.events, input.keepRecentTurns);
    if (!started && stubs.length === 0 && range === null) return finish('abandoned');
    if (!started) {
      session = await cache.append(session, [
        { type: 'compact/start', at: input.at, compactionId, trigger: input.trigger },
      ]);
    }
    const abandon = async (): Promise<CompactOutcome> => {
      session = await cache.append(session, [
        { type: 'compact/end', at: Date.now(), compactionId, outcome: 'abandoned' },
      ]);
      return finish('abandoned');
    };

    if (input.trigger === 'prune') {
      if (stubs.length === 0) return abandon();
      session = await cache.append(session, [
        ...stubs.map((stub, i): EventDraft => ({
          type: 'surface/replace',
          at: Date.now(),
          replaceId: `${compactionId}-${i + 1}`,
          range: { start: stub.position, end: stub.position },
          messages: [stub.message],
        })),
        { type: 'compact/end', at: Date.now(), compactionId, outcome: 'applied' },
      ]);
      return finish('applied');
    }

    if (!range) return abandon();
    const maxTokens = SUMMARY_MAX_TOKENS;
    const built = buildCompactionRequest(sessionId, session.events, maxTokens);
    // The same gate as a step: the summary request must be what a fresh read of the store derives.
    const fresh = buildCompactionRequest(sessionId, await runtime.store.read(sessionId), maxTokens);
    const where = firstDifference(built, fresh);
    if (where !== null) {
      throw new InvariantError(
        ErrorCode.RequestDiverges,
        sessionId,
        where,
        'the summary request differs from the stored log',
      );
    }
    const wire = await toWireBody(built, runtime.profile, runtime.readAttachment);
    // What compact/summary and compact/refused both record of the request, for the audit to re-derive.
    const sent = {
      provider: built.config.provider,
      model: built.config.model,
      maxTokens,
      requestDigest: wire.digest,
      requestBytes: wire.bytes,
    };
    let result: Awaited<ReturnType<typeof callModelObserved>>;
    try {
      result = await callModelObserved(runtime, {
        request: built,
        verified: wire,
        purpose: 'compaction',
        // A compaction runs between steps: it belongs to the open turn (or the last one) at step 0.
        context: {
          sessionId,
          turn: session.state.openTurn ?? session.state.lastTurn,
          step: 0,
          events: session.events,
        },
        onDelta: () => failpoint('compaction-summarizing'),
      });
    } catch (error) {
      // The summary request is the whole surface plus the instruction: when the step overflowed, it
      // overflows too. Then the oldest turns are dropped from the surface (they stay in the log), and
      // the session carries on instead of failing on the same overflow again.
      if (!(error instanceof ProviderError) || error.code !== ProviderErrorCode.ContextLengthExceeded) throw error;
      const omitted = [{ role: 'user' as const, content: omittedNotice(range.end - range.start + 1) }];
      session = await cache.append(session, [
        // The refused request was sent: the log says so, with the digest the audit re-derives.
        {
          type: 'compact/refused',
          at: Date.now(),
          compactionId,
          ...sent,
          error: { code: error.code, message: error.message },
        },
        { type: 'surface/replace', at: Date.now(), replaceId: compactionId, range, messages: omitted },
        { type: 'compact/end', at: Date.now(), compactionId, outcome: 'applied' },
      ]);
      return finish('applied');
    }
    if (result.message.interrupted) throw new CancelledFailure('interrupted during compaction');
    const summary = result.message.content?.trim() ?? '';
    if (summary === '') return abandon();
    const replacement = [{ role: 'user' as const, content: `${SUMMARY_PREFIX}${summary}` }];
    const after = session.deriveMessages();
    after.splice(range.start, range.end - range.start + 1, ...replacement);
    session = await cache.append(session, [
      {
        type: 'compact/summary',
        at: Date.now(),
        compactionId,
        ...sent,
        range,
        tokensBefore: before,
        tokensAfter: estimateTokens(after),
        ...(result.usage ? { usage: result.usage } : {}),
      },
      { type: 'surface/replace', at: Date.now(), replaceId: compactionId, range, messages: replacement },
      { type: 'compact/end', at: Date.now(), compactionId, outcome: 'applied' },
    ]);
    return finish('applied');
  });
}
