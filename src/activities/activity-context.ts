// What the session activities of one worker share: the runtime, the session cache, the outbound gate,
// and the activity edge every activity runs inside (classified failures, cancellation passed through).
import { CancelledFailure } from '@temporalio/activity';
import { DhError, ErrorCode, type Session } from '../core/index.js';
import type { AppendOutcome } from '../shared/activity-contracts.js';
import { OutboundGate } from './outbound-gate.js';
import { DEFAULT_MAX_SESSIONS, SessionCache } from './session-cache.js';
import type { SessionRuntime } from './session-runtime.js';
import { toApplicationFailure } from './to-application-failure.js';
import { classifyStoreUnavailable } from '../stores/store-unavailable.js';

export interface ActivityContext {
  readonly runtime: SessionRuntime;
  readonly cache: SessionCache;
  readonly gate: OutboundGate;
  /**
   * The activity edge for one session. A read that finds the stored log damaged (INVALID_EVENT, e.g. the
   * gate's fresh read) also drops the worker's cached copy: no later activity of the session may append
   * past the damage on the strength of a copy read before it, so each one refuses, as a fresh worker would.
   */
  guarded<T>(sessionId: string, run: () => Promise<T>): Promise<T>;
  /** The receipts of everything the log holds past `knownHead`, and its head; what `session` staged is written first. */
  outcome(session: Session, knownHead: number): Promise<AppendOutcome>;
  /** The same, with the session as caught up for it: what else the caller reads of it matches that head. */
  outcomeAt(session: Session, knownHead: number): Promise<{ outcome: AppendOutcome; current: Session }>;
}

export function createActivityContext(runtime: SessionRuntime): ActivityContext {
  const cache = new SessionCache(runtime.store, runtime.sessionCache);
  // The gate reads the store itself and keeps its own memory of verified rows, never the cache's. It
  // remembers as many sessions as the cache holds: fewer would make it verify cold, in full, whenever more
  // sessions than that take turns stepping on this worker.
  const gate = new OutboundGate(runtime.store, runtime.sessionCache?.maxSessions ?? DEFAULT_MAX_SESSIONS);
  return {
    runtime,
    cache,
    gate,
    guarded: (sessionId, run) =>
      edge(run, (error) => {
        if (error instanceof DhError && error.code === ErrorCode.InvalidEvent) cache.forget(sessionId);
      }),
    outcome: async (session, knownHead) => (await outcomeAt(session, knownHead)).outcome,
    outcomeAt,
  };

  async function outcomeAt(session: Session, knownHead: number) {
    // An activity's staged events are part of what it did: written, not dropped by the re-read below.
    await cache.append(session, []);
    const current = await cache.load(session.sessionId);
    return { outcome: { receipts: cache.receiptsSince(current, knownHead), head: current.head }, current };
  }
}

/** The activity edge: every failure leaves as a classified Temporal failure; cancellation passes through. */
async function edge<T>(run: () => Promise<T>, onFailure: (error: unknown) => void = () => {}): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof CancelledFailure) throw error;
    onFailure(error);
    // A database that is down or restarting (a store shard, the limiter's) is waited out, not a bug.
    throw toApplicationFailure(classifyStoreUnavailable(error));
  }
}
