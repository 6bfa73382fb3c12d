// The sessions list's memo: a polled list reads a log again only once it grew, and then shows what it
// grew by (real SQLite store).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OverviewMemo } from '../../src/console/overview-memo.js';
import { openSessionStore } from '../../src/stores/open-session-store.js';
import { inboxEnqueue, sessionStart, turnEnd, turnStart } from '../helpers/event-builders.js';

describe('the sessions list memo', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dh-overview-memo-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reuses an overview while the head is unchanged and recomputes it once the log grows', async () => {
    const store = await openSessionStore(join(dir, 'sessions.db'));
    try {
      await store.create('m', { createdAt: 1 });
      await store.append('m', 0, [sessionStart('m')]);
      const memo = new OverviewMemo();
      const first = await memo.of(store, 'm');
      expect(first?.overview.turns).toBe(0);
      expect(await memo.of(store, 'm')).toBe(first);
      await store.append('m', 1, [inboxEnqueue(1, 'x'), turnStart(2, 1), turnEnd(3, 1)]);
      const grown = await memo.of(store, 'm');
      expect(grown).not.toBe(first);
      expect(grown?.overview.turns).toBe(1);
      expect(grown?.overview.events).toBe(4);
      // The list's search looks in what the messages say, in lower case.
      expect(grown?.text).toContain('x');
      expect(await memo.of(store, 'never-created')).toBeNull();
    } finally {
      await store.close();
    }
  });
});
