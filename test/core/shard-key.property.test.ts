// The sharded store's routing key: every descendant of a session (however deep, however long the ids, hashed
// or not) maps to its root's shard; the mapping is stable and spreads roots over the shards.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { childSessionIdFor } from '../../src/core/delegation.js';
import { shardIndexOf, shardKeyOf } from '../../src/core/shard-key.js';

/** Session ids as the messages accept them, biased towards what child segments are made of. */
const sessionId = fc
  .array(fc.constantFrom('a', 'Z', '0', '1', '9', '.', 'd', '-', '_', '.d', '.d1-2-3', 'f'), {
    minLength: 1,
    maxLength: 60,
  })
  .chain((parts) => fc.integer({ min: 0, max: 110 }).map((pad) => (parts.join('') + 'x'.repeat(pad)).slice(0, 120)));

const descent = fc.array(fc.record({ turn: fc.nat(99), step: fc.nat(99), index: fc.nat(9) }), {
  minLength: 1,
  maxLength: 8,
});

describe('shardKeyOf', () => {
  it('gives every descendant its root key, and so its root shard', () => {
    fc.assert(
      fc.property(sessionId, descent, fc.integer({ min: 1, max: 64 }), (root, path, count) => {
        let id = root;
        for (const { turn, step, index } of path) {
          id = childSessionIdFor(id, turn, step, index);
          expect(shardKeyOf(id)).toBe(shardKeyOf(root));
          expect(shardIndexOf(id, count)).toBe(shardIndexOf(root, count));
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps short top-level ids whole and cuts children at their first segment', () => {
    expect(shardKeyOf('build-42')).toBe('build-42');
    expect(shardKeyOf('build-42.d1-2-0')).toBe('build-42');
    expect(shardKeyOf('build-42.d1-2-0.d3-1-1')).toBe('build-42');
    expect(shardKeyOf('my.data')).toBe('my.data');
  });

  it('is a fixed function: the same shards as when it was written (a change would move stored sessions)', () => {
    expect(['a', 'b', 'session-1', 'session-2', 'x'.repeat(120)].map((id) => shardIndexOf(id, 16))).toEqual(
      FIXED_INDEXES,
    );
  });

  it('spreads roots over the shards', () => {
    const counts = new Array<number>(8).fill(0);
    for (let i = 0; i < 8000; i++) counts[shardIndexOf(`session-${i}`, 8)]! += 1;
    for (const n of counts) expect(n).toBeGreaterThan(850);
  });

  it('refuses a count that is not a positive integer', () => {
    for (const count of [0, -1, 1.5, Number.NaN]) expect(() => shardIndexOf('a', count)).toThrow(RangeError);
  });
});

/** Measured once when the hash was chosen (`sha256-root-v1`); never edited. */
const FIXED_INDEXES = [2, 6, 8, 0, 14];
