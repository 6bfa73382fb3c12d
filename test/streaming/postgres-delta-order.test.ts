// A session's delta rows on PostgreSQL commit in id order even with several writers (a retried attempt and its
// zombie, parallel tool calls on two workers): a reader that follows by cursor while they write sees every
// row, so a stream position past a row never skips an earlier one that committed later.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LiveDeltaDraft } from '../../src/streaming/delta-channel.js';
import { PostgresDeltaChannel } from '../../src/streaming/postgres-delta-channel.js';
import { scratchSchema, type ScratchSchema } from '../helpers/scratch-schema.js';

describe('delta rows of one session written by several PostgreSQL writers', () => {
  let scratch: ScratchSchema;
  let url: string;
  beforeAll(async () => {
    scratch = await scratchSchema();
    url = scratch.url;
  });
  afterAll(() => scratch?.drop());

  it('are all seen by a reader following by cursor while four writers write', async () => {
    const writers = Array.from({ length: 4 }, () => new PostgresDeltaChannel(url));
    const reader = new PostgresDeltaChannel(url);
    const row = (writer: number, i: number): LiveDeltaDraft => ({
      sessionId: 's1',
      turn: 1,
      step: 1,
      // Each writer its own call, so nothing coalesces across writers.
      attempt: 1,
      kind: 'tool-progress',
      text: `${writer}:${i}`,
      callId: `c${writer}`,
      name: 'count',
      progress: i,
      at: Date.now(),
    });
    try {
      await reader.read('s1', 0); // the table exists before the writers race
      let writing = true;
      const seen: number[] = [];
      const following = (async () => {
        let cursor = 0;
        for (;;) {
          const done = !writing;
          for (const d of await reader.read('s1', cursor)) {
            seen.push(d.id);
            cursor = d.id;
          }
          if (done) return;
        }
      })();
      await Promise.all(
        writers.map(async (writer, w) => {
          for (let i = 0; i < 150; i++) {
            writer.publish(row(w, i));
            if (i % 3 === 0) await writer.flush();
          }
          await writer.flush();
        }),
      );
      writing = false;
      await following;
      const all = (await reader.read('s1', 0)).map((d) => d.id);
      expect(all).toHaveLength(600);
      // The follower, reading past ids as it went, missed none.
      expect(seen).toEqual(all);
    } finally {
      for (const writer of writers) await writer.close();
      await reader.close();
    }
  }, 60_000);
});
