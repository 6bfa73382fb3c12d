// The activity side's native sha256 gives exactly the core's pure digest, through the one-shot
// `crypto.hash` where Node has it and through a `Hash` object otherwise.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha256Digest } from '../../src/core/index.js';
import { hashObjectSha256Hex, nativeSha256Digest, oneShotSha256Hex } from '../../src/stores/native-sha256.js';

describe('native sha256', () => {
  it('uses the one-shot crypto.hash on every Node the package supports (>= 20.19)', () => {
    expect(oneShotSha256Hex).toBeTypeOf('function');
  });

  it('gives the pure digest for any string, lone surrogates included, by either path', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' })), (text) => {
        const pure = sha256Digest(text);
        expect(nativeSha256Digest(text)).toBe(pure);
        expect(`sha256:${hashObjectSha256Hex(text)}`).toBe(pure);
        expect(`sha256:${oneShotSha256Hex!(text)}`).toBe(pure);
      }),
      { numRuns: 500 },
    );
  });

  it('gives the pure digest for the empty string and for large inputs', () => {
    for (const text of ['', 'x'.repeat(1 << 20), '\u00e9\ud83d\ude00\ud800'.repeat(100_000)]) {
      expect(nativeSha256Digest(text)).toBe(sha256Digest(text));
      expect(hashObjectSha256Hex(text)).toBe(oneShotSha256Hex!(text));
    }
  });
});
