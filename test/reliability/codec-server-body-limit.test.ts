// The codec server's bound on request bodies: a body over `maxBodyBytes` is answered 413 with its JSON error,
// whether its length is declared or chunked, without the server reading on, and the server then decodes as
// before. (Before, the bound destroyed the connection mid-body: the client got a reset, not the 413.)
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AesGcmPayloadCodec } from '../../src/codec/aes-gcm-codec.js';
import { startCodecServer, type CodecServer } from '../../src/codec/codec-server.js';
import { sendOversizedBody } from '../helpers/oversized-body.js';

const MiB = 1024 * 1024;
const LIMIT = MiB;
const OFFERED = 600 * MiB;
/** The bound, what loopback sockets buffer, and what the adapter drains (64 MiB) before it closes. */
const GIVE_UP = LIMIT + 96 * MiB;

describe('the codec server bounds request bodies', () => {
  const codec = new AesGcmPayloadCodec({ key: randomBytes(32) });
  let server: CodecServer;
  beforeAll(async () => {
    server = await startCodecServer({ codec, port: 0, maxBodyBytes: LIMIT });
  });
  afterAll(() => server?.close());

  it('answers 413 JSON to a declared, a chunked and an upward-lying length', async () => {
    const url = `${server.url}/decode`;
    const headers = { 'content-type': 'application/json' };
    const answers = [
      await sendOversizedBody({ url, headers, framing: 'content-length', offered: OFFERED, giveUpAfter: GIVE_UP }),
      await sendOversizedBody({ url, headers, framing: 'chunked', offered: OFFERED, giveUpAfter: GIVE_UP }),
      await sendOversizedBody({
        url,
        headers,
        framing: 'content-length',
        declared: OFFERED,
        offered: 16,
        giveUpAfter: GIVE_UP,
      }),
    ];
    for (const answer of answers) {
      expect(answer.gaveUp, `the server read ${answer.sent} bytes without answering`).toBe(false);
      expect(answer.status).toBe(413);
      expect(answer.headers['content-type']).toContain('application/json');
      expect(JSON.parse(answer.body)).toEqual({ error: `the request body is larger than ${LIMIT} bytes` });
      expect(answer.sent).toBeLessThan(OFFERED);
    }
  });

  it('decodes as before after the refusals, and answers another method 405 with Allow', async () => {
    const [sealed] = await codec.encode([
      { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"x"') },
    ]);
    const payload = {
      metadata: Object.fromEntries(
        Object.entries(sealed?.metadata ?? {}).map(([k, v]) => [
          k,
          Buffer.from(v ?? new Uint8Array()).toString('base64'),
        ]),
      ),
      data: Buffer.from(sealed?.data ?? new Uint8Array()).toString('base64'),
    };
    const response = await fetch(`${server.url}/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payloads: [payload] }),
    });
    expect(response.status).toBe(200);
    const { payloads } = (await response.json()) as { payloads: { data: string }[] };
    expect(Buffer.from(payloads[0]?.data ?? '', 'base64').toString()).toBe('"x"');
    const put = await fetch(`${server.url}/decode`, { method: 'PUT', body: '{}' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('POST, OPTIONS');
  });
});
