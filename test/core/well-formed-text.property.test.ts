// The doors' rule for message text: every lone surrogate becomes U+FFFD, as String.prototype.toWellFormed does,
// so the text has a UTF-8 form; limits are unchanged (one code unit for one), and well-formed text is kept as is.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hasLoneSurrogate, wellFormed } from '../../src/core/index.js';
import { MessageSignalPayload, SendUpdatePayload, wellFormedMessage } from '../../src/shared/session-messages.js';

const unit = fc.oneof(
  fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', '\u{1f600}', 'a', 'é', '\ufffd'),
  fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)),
);
const text = fc.string({ unit, maxLength: 30 });

/** What the engine does (String.prototype.toWellFormed, ES2024; Node 20 has it, this repo's lib does not). */
const engineWellFormed = (s: string): string => (s as unknown as { toWellFormed(): string }).toWellFormed();

describe('well-formed message text', () => {
  it('replaces exactly the lone surrogates, as toWellFormed does, keeping the length', () => {
    fc.assert(
      fc.property(text, (s) => {
        const fixed = wellFormed(s);
        expect(fixed).toBe(engineWellFormed(s));
        expect(fixed.length).toBe(s.length);
        expect(hasLoneSurrogate(fixed)).toBe(false);
        expect(Buffer.from(fixed, 'utf8').toString('utf8')).toBe(fixed);
        if (!hasLoneSurrogate(s)) expect(fixed).toBe(s);
      }),
      { numRuns: 2000 },
    );
  });

  it('is applied by the message schemas every door parses with: content texts, image names and source', () => {
    const ref = { id: `sha256:${'a'.repeat(64)}`, mediaType: 'image/png' as const, bytes: 1, name: 'x\udfff' };
    const raw: MessageSignalPayload = {
      content: [
        { type: 'text', text: 'LONE \ud800 x' },
        { type: 'image', attachment: ref },
      ],
      source: 's\ud800',
    };
    const expected = {
      content: [
        { type: 'text', text: 'LONE \ufffd x' },
        { type: 'image', attachment: { ...ref, name: 'x\ufffd' } },
      ],
      source: 's\ufffd',
    };
    expect(MessageSignalPayload.parse(raw)).toEqual(expected);
    expect(SendUpdatePayload.parse({ ...raw, target: 'next-turn', wakeup: true })).toMatchObject(expected);
    expect(wellFormedMessage(raw)).toEqual(expected);
    expect(MessageSignalPayload.parse({ content: 'LONE \ud800 x' })).toEqual({ content: 'LONE \ufffd x' });
  });
});
