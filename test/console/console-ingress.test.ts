// What the HTTP API takes in, on the real stack (Temporal dev server, worker, SQLite, scripted provider): a
// message citing an image the attachment store does not hold is refused at the door (422, stable code) and
// queues nothing; message text with lone surrogates is stored well-formed and served as JSON strict parsers
// read; a fork cannot create a session id the API (or a command line) cannot address.
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiError } from '../../src/console/console-api.js';
import type { ConsoleServer } from '../../src/console/console-server.js';
import type { AttachmentRef } from '../../src/core/index.js';
import { MemoryDeltaChannel } from '../../src/streaming/memory-delta-channel.js';
import { startHarness, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { loneSurrogatesIn } from '../helpers/well-formed-json.js';
import { call, post, startTestConsole } from './console-client.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const UNKNOWN: AttachmentRef = { id: `sha256:${'0'.repeat(64)}`, mediaType: 'image/png', bytes: PNG.length };

const errorOf = (body: unknown) => (body as Partial<ApiError> | null)?.error ?? { code: '(no error)', message: '' };

/** Parses JSON bytes as a strict parser (jq) does: valid UTF-8, and no string with a lone surrogate. */
function strictJson(bytes: Uint8Array): unknown {
  const value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as unknown;
  expect(loneSurrogatesIn(value)).toEqual([]);
  return value;
}

describe('console ingress', () => {
  let h: Harness;
  let server: ConsoleServer;
  const messages = (id: string, body: unknown) => post(server.url, `/api/sessions/${id}/messages`, body);

  beforeAll(async () => {
    h = await startHarness({ script: { mode: 'match', replies: [{ text: 'ok', repeat: 50 }] } });
    server = await startTestConsole(h, new MemoryDeltaChannel());
  }, 90_000);
  afterAll(async () => {
    await server?.close();
    await h?.stop();
  });

  it('refuses a message citing an image the store does not hold (422), queues nothing, and the session goes on', async () => {
    const id = 'door-attachments';
    await h.start(id);
    const image = (attachment: AttachmentRef) => ({
      kind: 'followup',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', attachment },
      ],
    });
    const unknown = await messages(id, image(UNKNOWN));
    expect([unknown.status, errorOf(unknown.body).code]).toEqual([422, 'ATTACHMENT_NOT_FOUND']);
    expect(errorOf(unknown.body).message).toMatch(/content\.1: attachment sha256:0{64} is not in the attachment store/);
    const ref = await h.attachments.put(PNG, 'image/png');
    const misdeclared = await messages(id, image({ ...ref, bytes: ref.bytes + 1 }));
    expect([misdeclared.status, errorOf(misdeclared.body).code]).toEqual([422, 'ATTACHMENT_INVALID']);

    const plain = await messages(id, { kind: 'followup', content: 'plain text' });
    expect(plain.status).toBe(202);
    const events = await waitForTurnEnd(h.store, id, 1);
    expect(
      events.filter((e) => e.type === 'inbox/enqueue').map((e) => e.type === 'inbox/enqueue' && e.content),
    ).toEqual(['plain text']);
    expect(events.find((e) => e.type === 'turn/end')).toMatchObject({ reason: 'completed' });
  });

  it('stores message text with lone surrogates well-formed, and serves JSON a strict parser reads', async () => {
    const id = 'door-lone-surrogates';
    await h.start(id);
    // The body as a client sends it: JSON text with the escape of a lone surrogate.
    const sent = await call(server.url, `/api/sessions/${id}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"kind":"followup","content":"LONE \\ud800 x","source":"svc \\udc00"}',
    });
    expect(sent.status).toBe(202);
    const events = await waitForTurnEnd(h.store, id, 1);
    expect(events.find((e) => e.type === 'inbox/enqueue')).toMatchObject({
      content: 'LONE \ufffd x',
      source: 'svc \ufffd',
    });
    const db = new Database(h.storePath, { readonly: true });
    try {
      const rows = db
        .prepare('SELECT CAST(body AS BLOB) AS body FROM events WHERE session_id = ? ORDER BY seq')
        .all(id) as Array<{ body: Buffer }>;
      expect(rows.length).toBe(events.length);
      for (const row of rows) strictJson(row.body);
    } finally {
      db.close();
    }
    for (const path of [`/api/sessions/${id}`, `/api/sessions/${id}/events`, `/api/sessions/${id}/timeline`]) {
      const response = await fetch(new URL(path, server.url));
      expect(response.status, path).toBe(200);
      strictJson(new Uint8Array(await response.arrayBuffer()));
    }
  });

  it('refuses fork ids the API or a command line could not address, and ids like them in its paths', async () => {
    const id = 'door-fork';
    await h.start(id);
    await post(server.url, `/api/sessions/${id}/messages`, { kind: 'followup', content: 'hi' });
    await waitForTurnEnd(h.store, id, 1);
    for (const as of ['..', '.', '...', '-rf', '--help']) {
      const fork = await post(server.url, `/api/sessions/${id}/fork`, { atSeq: 1, as });
      expect([as, fork.status, errorOf(fork.body).code]).toEqual([as, 400, 'INVALID_PAYLOAD']);
    }
    expect((await h.store.list()).map((s) => s.sessionId).filter((s) => !/^door-/.test(s))).toEqual([]);
    for (const path of ['-rf', '--help', '...']) {
      const read = await call(server.url, `/api/sessions/${path}`);
      expect([path, read.status, errorOf(read.body).code]).toEqual([path, 400, 'INVALID_PAYLOAD']);
    }
    // An id the rule accepts forks and is read back by the same paths.
    const fork = await post(server.url, `/api/sessions/${id}/fork`, { atSeq: 1, as: 'door-fork.copy' });
    expect(fork.status).toBe(201);
    expect((await call(server.url, '/api/sessions/door-fork.copy')).status).toBe(200);
  });
});
