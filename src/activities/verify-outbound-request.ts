// The outbound gate as the activity side runs it: rebuild the request from a fresh read of the store
// (one sequential read, validated on load) and compare; never from the live session's cache.
import type { BuiltRequest } from '../core/build-request.js';
import { verifyRequest } from '../core/verify-request.js';
import type { SessionStore } from '../stores/session-store.js';

/**
 * Returns the request if the stored log derives exactly it; throws InvariantError otherwise.
 * Call it as the last step before the wire body is built, so nothing can change in between.
 */
export async function verifyOutboundRequest(store: SessionStore, request: BuiltRequest): Promise<BuiltRequest> {
  const events = await store.read(request.sessionId);
  return verifyRequest(request, events);
}
