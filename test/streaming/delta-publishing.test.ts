// Publishing deltas: the first token after a quiet spell is written at once and later ones coalesced;
// a reader of the SQLite channel in another connection is woken by the write, not by its poll timer.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PUBLISH_INTERVAL_MS, type LiveDeltaDraft } from '../../src/streaming/delta-channel.js';
import { DeltaBuffer } from '../../src/streaming/delta-rows.js';
import { SqliteDeltaChannel } from '../../src/streaming/sqlite-delta-channel.js';

const delta = (text: string): LiveDeltaDraft => ({
  sessionId: 's1',
  turn: 1,
  step: 1,
  attempt: 1,
  kind: 'text',
  text,
  at: Date.now(),
});

describe('DeltaBuffer', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes the first delta at once, coalesces the next ones into one write per window', () => {
    const writes: string[][] = [];
    const buffer = new DeltaBuffer((batch) => {
      writes.push(batch.map((d) => d.text));
      return Promise.resolve();
    });
    buffer.add(delta('a'));
    expect(writes).toEqual([['a']]);
    buffer.add(delta('b'));
    buffer.add(delta('c'));
    expect(writes).toHaveLength(1);
    vi.advanceTimersByTime(PUBLISH_INTERVAL_MS);
    expect(writes.map((w) => w.join(''))).toEqual(['a', 'bc']);
    // A window with nothing in it closes; the next delta is a first one again.
    vi.advanceTimersByTime(PUBLISH_INTERVAL_MS * 3);
    expect(writes).toHaveLength(2);
    buffer.add(delta('d'));
    expect(writes.map((w) => w.join(''))).toEqual(['a', 'bc', 'd']);
  });
});

describe('SqliteDeltaChannel.wait', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dh-deltas-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("is woken by another connection's write, long before its poll timer", { timeout: 20_000 }, async () => {
    const path = join(dir, 'sessions.live.db');
    const writer = SqliteDeltaChannel.open(path);
    const reader = SqliteDeltaChannel.open(path, { pollMs: 60_000 });
    try {
      let woken = false;
      const waiting = reader.wait('s1', 60_000).then(() => {
        woken = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(woken).toBe(false);
      writer.publish(delta('hello'));
      await waiting;
      expect((await reader.read('s1', 0)).map((d) => d.text)).toEqual(['hello']);
    } finally {
      await writer.close();
      await reader.close();
    }
  });
});
