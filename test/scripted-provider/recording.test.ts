// Request recording: every request, byte-exact and in arrival order, through the API and the JSONL
// file, recorded before validation, with the status it was answered (its fault, its error code); credentials
// never recorded.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { RecordedRequest } from '../../src/scripted-provider/start-scripted-provider.js';
import { post, useProvider } from './helpers.js';

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dh-scripted-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// Odd spacing, key order, escapes and non-ASCII: anything a re-serialization would change.
const BODIES = [
  '{"model":"deepseek-chat",  "messages":[{"role":"user","content":"héllo \\u00e9 👋"}],"temperature":0.70}',
  '{ "messages": [ { "content": "second\\n", "role": "user" } ],\n  "model": "deepseek-chat" }',
  '{not json at all',
  '{"model":"no-such-model","messages":[{"role":"user","content":"x"}]}',
];

describe('recording', () => {
  it('records every body byte-exact, in arrival order, before validating it (API and JSONL file)', async () => {
    const dir = tempDir();
    const recordFile = join(dir, 'requests.jsonl');
    const provider = await useProvider({ replies: [{ text: 'a' }, { text: 'b' }] }, { recordFile });
    const statuses: number[] = [];
    for (const body of BODIES) statuses.push((await post(provider, body)).status);
    await fetch(`${provider.url}/models`);
    expect(statuses).toEqual([200, 200, 400, 404]);

    const recorded = provider.requests();
    expect(recorded.map((r) => r.index)).toEqual([0, 1, 2, 3, 4]);
    expect(recorded.slice(0, 4).map((r) => r.body)).toEqual(BODIES);
    for (const [i, body] of BODIES.entries()) {
      expect(Buffer.from(recorded[i]!.body, 'utf8').equals(Buffer.from(body, 'utf8'))).toBe(true);
    }
    expect(recorded[0]).toMatchObject({ method: 'POST', path: '/v1/chat/completions' });
    expect(recorded[4]).toMatchObject({ method: 'GET', path: '/v1/models', body: '' });
    expect(recorded[0]?.headers['content-type']).toBe('application/json');
    expect(typeof recorded[0]?.receivedAt).toBe('number');

    const lines = readFileSync(recordFile, 'utf8').trimEnd().split('\n');
    const fromFile = lines.map((line) => JSON.parse(line) as RecordedRequest);
    expect(fromFile).toEqual(recorded);
  });

  it('records the status each request was answered, which fault and which error code (API and JSONL file)', async () => {
    const dir = tempDir();
    const recordFile = join(dir, 'requests.jsonl');
    const provider = await useProvider(
      {
        replies: [
          { text: 'a' },
          { fault: { kind: 'rate-limit', retryAfterSeconds: 1 } },
          { fault: { kind: 'disconnect', afterChunks: 0 } },
          { text: 'held', chunkSize: 2, hold: { afterChunks: 1, key: 'k' } },
        ],
        // One request a minute: the second one this key sends is the quota's 429, which takes no reply.
        quota: { requestsPerMinute: 1 },
      },
      { recordFile },
    );
    const ask = { model: 'deepseek-chat', messages: [{ role: 'user', content: 'hi' }] };
    const key = (n: number) => ({ headers: { authorization: `Bearer sk-key-${n}` } });
    expect((await post(provider, ask, key(1))).status).toBe(200);
    expect((await post(provider, ask, key(1))).status).toBe(429); // the quota
    expect((await post(provider, ask, key(2))).status).toBe(429); // the script's rate-limit fault
    expect((await post(provider, '{not json', key(3))).status).toBe(400);
    await expect(post(provider, ask, key(4))).rejects.toThrow(); // disconnect: no status at all
    // A stream held at the provider is recorded with its 200 while it is held.
    const held = await post(provider, { ...ask, stream: true }, key(5));
    expect(held.status).toBe(200);
    const whileHeld = provider.requests().at(-1);
    expect(whileHeld?.answer).toEqual({ status: 200 });
    provider.release('k');
    await held.text();
    expect((await post(provider, ask, key(6))).status).toBe(500);
    await fetch(`${provider.url}/models`);

    const answers = [
      { status: 200 },
      { status: 429, error: 'rate_limit_exceeded' },
      { status: 429, fault: 'rate-limit', error: 'rate_limit_exceeded' },
      { status: 400, error: 'invalid_json' },
      { status: null, fault: 'disconnect' },
      { status: 200 },
      { status: 500, error: 'script_exhausted' },
      { status: 200 },
    ];
    const recorded = provider.requests();
    expect(recorded.map((r) => r.answer)).toEqual(answers);
    const fromFile = readFileSync(recordFile, 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as RecordedRequest);
    expect(fromFile.sort((a, b) => a.index - b.index)).toEqual(recorded);
    // What the file alone says: two 429s, one of them the script's.
    const lines = readFileSync(recordFile, 'utf8');
    expect(lines.match(/"status":429/g)).toHaveLength(2);
  });

  it('never records credentials: authorization keeps only its scheme, api-key headers are masked', async () => {
    const dir = tempDir();
    const recordFile = join(dir, 'requests.jsonl');
    const provider = await useProvider({ replies: [{ text: 'ok' }] }, { recordFile });
    const secret = 'sk-live-0123456789abcdef';
    await post(
      provider,
      { model: 'deepseek-chat', messages: [{ role: 'user', content: 'hi' }] },
      { headers: { authorization: `Bearer ${secret}`, 'x-api-key': secret, 'api-key': secret } },
    );
    await fetch(`${provider.url}/models`, { headers: { authorization: secret } });
    const [first, second] = provider.requests();
    expect(first?.headers.authorization).toBe('Bearer [redacted]');
    expect(first?.headers['x-api-key']).toBe('[redacted]');
    expect(first?.headers['api-key']).toBe('[redacted]');
    expect(second?.headers.authorization).toBe('[redacted]');
    expect(JSON.stringify(provider.requests())).not.toContain(secret);
    expect(readFileSync(recordFile, 'utf8')).not.toContain(secret);
  });

  it('hands out a snapshot: later requests do not change an earlier requests() result', async () => {
    const provider = await useProvider({ replies: [] });
    await fetch(`${provider.url}/models`);
    const before = provider.requests();
    await fetch(`${provider.url}/models`);
    expect(before).toHaveLength(1);
    expect(provider.requests()).toHaveLength(2);
    expect(Object.isFrozen(before[0])).toBe(true);
  });

  it('fails at start when the record file cannot be written', async () => {
    const dir = tempDir();
    await expect(useProvider({ replies: [] }, { recordFile: join(dir, 'missing-dir', 'r.jsonl') })).rejects.toThrow(
      /ENOENT/,
    );
  });
});
