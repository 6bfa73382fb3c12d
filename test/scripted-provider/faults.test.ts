// Every scripted fault kind over real HTTP: rate limit (retry-after headers), server errors, arbitrary
// statuses, recorded real answers, a socket dropped mid-stream, hangs (with and without keep-alives),
// malformed SSE, and an empty stream. Hangs are ended by the client aborting after a short wait.
import { describe, expect, it } from 'vitest';
import {
  ChatCompletion,
  ChatCompletionChunk,
  ErrorBody,
} from '../../src/scripted-provider/chat-completion-response.js';
import { post, readChunks, readData, sseEvents, useProvider, user } from './helpers.js';

const body = (stream: boolean) => ({ model: 'deepseek-chat', stream, messages: [user('go')] });

describe('HTTP-status faults', () => {
  it('rate-limit answers 429 with retry-after and retry-after-ms, then the next reply serves', async () => {
    const provider = await useProvider({
      replies: [{ fault: { kind: 'rate-limit', retryAfterSeconds: 1.5 }, repeat: 2 }, { text: 'finally' }],
    });
    for (let i = 0; i < 2; i++) {
      const res = await post(provider, body(true));
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('2');
      expect(res.headers.get('retry-after-ms')).toBe('1500');
      const error = ErrorBody.parse(await res.json()).error;
      expect(error.code).toBe('rate_limit_exceeded');
    }
    const ok = await post(provider, body(false));
    expect(ok.status).toBe(200);
    expect(ChatCompletion.parse(await ok.json()).choices[0]?.message.content).toBe('finally');
  });

  it('server-error answers 500 (or the scripted 5xx) with a server_error body', async () => {
    const provider = await useProvider({
      replies: [{ fault: { kind: 'server-error' } }, { fault: { kind: 'server-error', status: 503, message: 'busy' } }],
    });
    const first = await post(provider, body(true));
    expect(first.status).toBe(500);
    expect(ErrorBody.parse(await first.json()).error.type).toBe('server_error');
    const second = await post(provider, body(false));
    expect(second.status).toBe(503);
    expect(ErrorBody.parse(await second.json()).error.message).toBe('busy');
  });

  it.each([
    [401, undefined, 'invalid_api_key'],
    [400, 'context_length_exceeded', 'context_length_exceeded'],
    [404, undefined, 'not_found'],
    [413, undefined, 'request_too_large'],
  ])('status fault %i answers that status with code %s', async (status, code, expected) => {
    const provider = await useProvider({
      replies: [{ fault: { kind: 'status', status, ...(code !== undefined ? { code } : {}) } }],
    });
    const res = await post(provider, body(true));
    expect(res.status).toBe(status);
    expect(ErrorBody.parse(await res.json()).error.code).toBe(expected);
  });
});

describe('recorded answers', () => {
  it('replays a string body byte for byte with its status and headers, a JSON body as JSON', async () => {
    const sse = 'event: error\ndata: {"error":{"message":"Input does not fit in context length."}}\n\n';
    const vllm = { object: 'error', message: 'max_tokens must be at least 1, got -186.', param: null, code: 400 };
    const provider = await useProvider({
      replies: [
        { fault: { kind: 'recorded', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse } },
        { fault: { kind: 'recorded', status: 400, body: vllm } },
      ],
    });
    const first = await post(provider, body(true));
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('text/event-stream');
    expect(await first.text()).toBe(sse);
    const second = await post(provider, body(true));
    expect(second.status).toBe(400);
    expect(second.headers.get('content-type')).toBe('application/json');
    expect(await second.json()).toEqual(vllm);
  });
});

describe('stream faults', () => {
  it('disconnect drops the socket after the given number of chunks', async () => {
    const provider = await useProvider({
      replies: [{ text: 'this reply never finishes', chunkSize: 4, fault: { kind: 'disconnect', afterChunks: 2 } }],
    });
    const res = await post(provider, body(true));
    expect(res.status).toBe(200);
    const seen: string[] = [];
    const read = (async () => {
      for await (const event of sseEvents(res)) seen.push(event.value);
    })();
    await expect(read).rejects.toThrow();
    expect(seen).toHaveLength(2);
    const chunks = seen.map((value) => ChatCompletionChunk.parse(JSON.parse(value)));
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    expect(chunks[1]?.choices[0]?.delta.content).toBe('this');
  });

  it('disconnect on a non-streaming request fails the request with no response', async () => {
    const provider = await useProvider({ replies: [{ text: 'x', fault: { kind: 'disconnect' } }, { text: 'next' }] });
    await expect(post(provider, body(false))).rejects.toThrow();
    const next = await post(provider, body(false));
    expect(ChatCompletion.parse(await next.json()).choices[0]?.message.content).toBe('next');
  });

  it('hang sends headers and then nothing until the client gives up', async () => {
    const provider = await useProvider({
      replies: [{ text: 'never sent', fault: { kind: 'hang' } }, { text: 'after' }],
    });
    const controller = new AbortController();
    const res = await post(provider, body(true), { signal: controller.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events: string[] = [];
    const read = (async () => {
      for await (const event of sseEvents(res)) events.push(event.value);
    })();
    setTimeout(() => controller.abort(), 200);
    await expect(read).rejects.toThrow(/abort/i);
    expect(events).toEqual([]);
    // The provider is still healthy afterwards.
    const next = await post(provider, body(false));
    expect(ChatCompletion.parse(await next.json()).choices[0]?.message.content).toBe('after');
  });

  it('hang on a non-streaming request never completes the body', async () => {
    const provider = await useProvider({ replies: [{ text: 'x', fault: { kind: 'hang' } }] });
    const res = await post(provider, body(false), { signal: AbortSignal.timeout(250) });
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });

  it('hang with keepAlive sends only SSE comments', async () => {
    const provider = await useProvider({
      replies: [{ text: 'never sent', fault: { kind: 'hang', keepAlive: true, keepAliveIntervalMs: 20 } }],
    });
    const controller = new AbortController();
    const res = await post(provider, body(true), { signal: controller.signal });
    const events: { kind: string; value: string }[] = [];
    const read = (async () => {
      for await (const event of sseEvents(res)) {
        events.push(event);
        if (events.length === 3) controller.abort();
      }
    })();
    await expect(read).rejects.toThrow(/abort/i);
    expect(events).toHaveLength(3);
    expect(events.every((e) => e.kind === 'comment' && e.value === 'keep-alive')).toBe(true);
  });

  it('close() ends a hanging connection', async () => {
    const provider = await useProvider({
      replies: [{ fault: { kind: 'hang', keepAlive: true, keepAliveIntervalMs: 10 } }],
    });
    const res = await post(provider, body(true));
    const read = readData(res);
    await provider.close();
    await expect(read).rejects.toThrow();
  });

  it('malformed-sse sends a valid first event, then one that is not JSON, and no [DONE]', async () => {
    const provider = await useProvider({ replies: [{ text: 'abc', fault: { kind: 'malformed-sse' } }] });
    const data = await readData(await post(provider, body(true)));
    expect(data).toHaveLength(2);
    ChatCompletionChunk.parse(JSON.parse(data[0]!));
    expect(() => JSON.parse(data[1]!) as unknown).toThrow(SyntaxError);
    expect(data).not.toContain('[DONE]');
  });

  it('malformed-sse on a non-streaming request answers a body that is not JSON', async () => {
    const provider = await useProvider({ replies: [{ text: 'abc', fault: { kind: 'malformed-sse' } }] });
    const res = await post(provider, body(false));
    expect(res.status).toBe(200);
    await expect(res.json()).rejects.toThrow(SyntaxError);
  });

  it('empty answers 200 with a stream that has no choices', async () => {
    const provider = await useProvider({ replies: [{ text: 'unused', fault: { kind: 'empty' }, repeat: 2 }] });
    const chunks = await readChunks(await post(provider, body(true)));
    expect(chunks).toHaveLength(1);
    expect(chunks[0]?.choices).toEqual([]);
    const res = await post(provider, body(false));
    expect(res.status).toBe(200);
    expect(ChatCompletion.parse(await res.json()).choices).toEqual([]);
  });

  it('delayMs holds the first byte; a client that gives up does not break the provider', async () => {
    const provider = await useProvider({ replies: [{ text: 'late', delayMs: 5_000 }, { text: 'prompt' }] });
    await expect(post(provider, body(true), { signal: AbortSignal.timeout(100) })).rejects.toThrow();
    const next = await post(provider, body(false));
    expect(ChatCompletion.parse(await next.json()).choices[0]?.message.content).toBe('prompt');
  });
});
