// A page of sessions without the eval logs `dh eval` writes (one per evaluated step), reading on past them so a
// page is still full when more sessions follow. Shared by `dh ls` and the console's session list.
import { EVAL_SESSION_PREFIX } from '../eval/eval-log.js';
import type { ListOptions, SessionStore, SessionSummary } from '../stores/session-store.js';

export async function listWithoutEvals(
  store: Pick<SessionStore, 'list'>,
  options: ListOptions & { readonly limit: number },
): Promise<SessionSummary[]> {
  const { limit } = options;
  const kept: SessionSummary[] = [];
  let cursor = options.after;
  for (;;) {
    const page = await store.list({ limit, ...(cursor !== undefined ? { after: cursor } : {}) });
    for (const session of page) {
      if (session.sessionId.startsWith(EVAL_SESSION_PREFIX)) continue;
      kept.push(session);
      if (kept.length === limit) return kept;
    }
    const last = page.at(-1);
    if (page.length < limit || last === undefined) return kept;
    cursor = { createdAt: last.createdAt, sessionId: last.sessionId };
  }
}
