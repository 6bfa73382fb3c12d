// The workflow's decoder of raw signal and update arguments: what it accepts decodes to exactly what the
// SDK's default converter made of it (replay safety); everything else is a problem that names why.
import { defaultPayloadConverter, RawValue, type Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { UNDECRYPTABLE_ENCODING, UNDECRYPTABLE_REASON_METADATA } from '../../src/shared/undecryptable-payload.js';
import { decodeRawArguments } from '../../src/workflows/decode-raw-arguments.js';

const payload = (metadata: Record<string, string>, data: Uint8Array | string = ''): Payload => ({
  metadata: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, Buffer.from(v)])),
  data: typeof data === 'string' ? Buffer.from(data) : data,
});
const raw = (p: Payload) => RawValue.fromPayload(p);

describe('decodeRawArguments', () => {
  it('decodes json/plain exactly as the default converter does, and binary/null (or nothing) as absent', () => {
    for (const value of [{ content: 'héllo "q" \\ \n', n: 1.5e300, list: [null, true] }, 'text', 42, null, []]) {
      const converted = defaultPayloadConverter.toPayload(value);
      expect(decodeRawArguments([raw(converted)])).toEqual({
        ok: true,
        first: defaultPayloadConverter.fromPayload(converted),
      });
    }
    expect(decodeRawArguments([raw(defaultPayloadConverter.toPayload(undefined))])).toEqual({
      ok: true,
      first: undefined,
    });
    expect(decodeRawArguments([])).toEqual({ ok: true, first: undefined });
    // Later arguments are decoded (a poison one is refused) but only the first is handed on.
    const second = raw(payload({ encoding: 'json/plain' }, '{"b":2}'));
    expect(decodeRawArguments([raw(payload({ encoding: 'json/plain' }, '{"a":1}')), second])).toEqual({
      ok: true,
      first: { a: 1 },
    });
  });

  it('names the problem of each payload it cannot decode', () => {
    const problem = (...payloads: Payload[]) => {
      const decoded = decodeRawArguments(payloads.map(raw));
      return decoded.ok ? null : decoded.problem;
    };
    expect(problem(payload({ encoding: 'weird/enc' }, '{}'))).toBe('payload encoding "weird/enc" is not json/plain');
    expect(problem(payload({ encoding: 'binary/plain' }, 'x'))).toBe(
      'payload encoding "binary/plain" is not json/plain',
    );
    expect(problem(payload({ encoding: 'json/protobuf' }, '{}'))).toBe(
      'payload encoding "json/protobuf" is not json/plain',
    );
    expect(problem(payload({ encoding: 'json/plain' }, '{not json'))).toBe(
      'payload is not JSON (encoding "json/plain")',
    );
    expect(problem(payload({ encoding: 'json/plain' }, new Uint8Array([0xd7, 0x6d, 0xf8])))).toBe(
      'payload is not JSON (encoding "json/plain")',
    );
    expect(problem(payload({}, '{}'))).toBe('payload has no encoding (expected json/plain)');
    expect(problem(payload({ encoding: 'x'.repeat(1_000) }))).toBe(
      `payload encoding "${'x'.repeat(100)}…" is not json/plain`,
    );
    expect(
      problem(
        payload({ encoding: UNDECRYPTABLE_ENCODING, [UNDECRYPTABLE_REASON_METADATA]: 'PAYLOAD_KEY_UNKNOWN: why' }),
      ),
    ).toBe('payload cannot be decrypted: PAYLOAD_KEY_UNKNOWN: why');
    expect(problem(payload({ encoding: 'json/plain' }, '{}'), payload({ encoding: 'weird/enc' }))).toBe(
      'argument 2: payload encoding "weird/enc" is not json/plain',
    );
  });
});
