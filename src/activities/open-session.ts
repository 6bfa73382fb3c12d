// openSession: creates the session's log if needed, or repairs what a crashed run left open (appending
// only), and hands a starting run what the log holds: head, queue, recent message ids and totals.
import {
  addUsage,
  DhError,
  emptyUsage,
  repairDrafts,
  SESSION_FORMAT_VERSION,
  TransientError,
  type Session,
} from '../core/index.js';
import type { OpenSessionInput, OpenSessionOutcome, SessionTotals } from '../shared/activity-contracts.js';
import type { ActivityContext } from './activity-context.js';
import { queuedRefs, recentMessageIds } from './inbox-drafts.js';

export async function openSession(context: ActivityContext, input: OpenSessionInput): Promise<OpenSessionOutcome> {
  const { cache, runtime } = context;
  return context.guarded(input.sessionId, async () => {
    await storeCall(() => runtime.store.create(input.sessionId, { createdAt: input.at }));
    let session = await cache.load(input.sessionId);
    const before = session.head;
    if (session.head === 0) {
      session = await cache.append(session, [
        { type: 'session/start', at: input.at, sessionId: input.sessionId, formatVersion: SESSION_FORMAT_VERSION },
      ]);
    } else {
      session = await cache.append(session, repairDrafts(session, input.at));
    }
    return {
      receipts: cache.receiptsSince(session, before),
      head: session.head,
      ...(runtime.hostTaskQueue !== undefined ? { hostTaskQueue: runtime.hostTaskQueue } : {}),
      repaired: before === 0 ? 0 : session.head - before,
      lastTurn: session.state.lastTurn,
      queue: queuedRefs(session),
      messageIds: recentMessageIds(session),
      totals: sessionTotals(session),
    };
  });
}

/** The whole session's counts as the log holds them (what a run without a carry starts from). */
function sessionTotals(session: Session): SessionTotals {
  const usage = emptyUsage();
  let steps = 0;
  let compactions = 0;
  for (const e of session.events) {
    if (e.type === 'assistant/message') {
      steps++;
      addUsage(usage, e.usage);
    } else if (e.type === 'compact/end' && e.outcome === 'applied') {
      compactions++;
    }
  }
  const end = session.state.lastTurnEnd;
  return {
    steps,
    usage,
    compactions,
    lastTurnEnd: end ? { turn: end.turn, reason: end.reason, errorCode: end.error?.code ?? null } : null,
  };
}

/** Store I/O that fails without a classified error (connection lost, database busy) is transient. */
async function storeCall<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof DhError) throw error;
    throw new TransientError(
      'STORE_UNAVAILABLE',
      `session store: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}
