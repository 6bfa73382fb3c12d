// The scripted provider's bound on request bodies (`dh scripted-provider` serves it to whoever reaches the
// port): a body over `maxBodyBytes` is answered 413 in the OpenAI error shape, declared, chunked or lying,
// without the server reading on or recording it, and requests after it are answered and recorded as before.
import { describe, expect, it } from 'vitest';
import { sendOversizedBody } from '../helpers/oversized-body.js';
import { post, useProvider, user } from './helpers.js';

const MiB = 1024 * 1024;
const LIMIT = MiB;
const OFFERED = 600 * MiB;
/** The bound, what loopback sockets buffer, and what the adapter drains (64 MiB) before it closes. */
const GIVE_UP = LIMIT + 96 * MiB;

describe('the scripted provider bounds request bodies', () => {
  it('answers 413 to a declared, a chunked and an upward-lying length, and serves the next request', async () => {
    const provider = await useProvider({ replies: [{ text: 'after the refusals' }] }, { maxBodyBytes: LIMIT });
    const url = `${provider.url}/chat/completions`;
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
      expect(JSON.parse(answer.body)).toMatchObject({
        error: { code: 'request_too_large', type: 'invalid_request_error' },
      });
      expect(answer.sent).toBeLessThan(OFFERED);
    }
    const ok = await post(provider, { model: 'deepseek-chat', messages: [user('hi')] });
    expect(ok.status).toBe(200);
    expect(provider.requests()).toHaveLength(1);
  });
});
