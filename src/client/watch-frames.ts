// The frames of a session's live stream as an async iterable, for SessionClient.watch: it rides out store
// outages (the follower is unchanged by a failed round), and ends when asked to or once the session is
// closed and everything it logged has been delivered.
import { PatientPoller } from '../streaming/patient-poller.js';
import {
  SessionFollower,
  type FollowedChannel,
  type FollowedLog,
  type StreamFrame,
} from '../streaming/session-follower.js';
import type { StreamPosition } from '../streaming/stream-position.js';

/** Where a watch reads a session from: the store and the delta channel a worker writes (openSessionStore, openDeltaChannel). */
export interface LiveSource {
  readonly store: FollowedLog;
  readonly channel: FollowedChannel;
}

export interface WatchOptions {
  /** Continue right after the frame that carried this position (default: the session's first event). */
  readonly from?: StreamPosition;
  /** Stops the watch (the iterator then ends). */
  readonly signal?: AbortSignal;
  /** Keep watching after the session closes (default false: end once its last events are delivered). */
  readonly afterClose?: boolean;
  /** The longest a round waits for news when nothing wakes it (default 250 ms). */
  readonly pollMs?: number;
  /** Called once at the start of each spell in which the store cannot be read. */
  readonly onStall?: (reason: string) => void;
}

/** `isClosed` answers whether the session's workflow has closed (null: cannot tell now). */
export async function* watchFrames(
  source: LiveSource,
  sessionId: string,
  isClosed: () => Promise<boolean | null>,
  options: WatchOptions = {},
): AsyncGenerator<StreamFrame, void, undefined> {
  const follower = new SessionFollower(source.store, source.channel, sessionId, {
    ...(options.from !== undefined ? { from: options.from } : {}),
  });
  const poller = new PatientPoller(follower, { ...(options.onStall ? { onStall: options.onStall } : {}) });
  const pollMs = options.pollMs ?? 250;
  let closedSeen = false;
  let checkedAt = 0;
  while (options.signal?.aborted !== true) {
    const frames = await poller.poll();
    for (const frame of frames) yield frame;
    // A closed session is done once a round after the close was seen delivers nothing new.
    if (closedSeen && frames.length === 0 && !poller.stalled) return;
    if (options.afterClose !== true && !closedSeen && Date.now() - checkedAt > 2_000) {
      checkedAt = Date.now();
      closedSeen = (await isClosed()) === true;
      if (closedSeen) continue;
    }
    if (frames.length === 0) await source.channel.wait(sessionId, pollMs);
  }
}
