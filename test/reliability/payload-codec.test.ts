// Payload encryption end to end: a worker and a client sharing the AES-256-GCM codec run a session whose
// history holds only ciphertext; a plain-JSON signal from the `temporal` CLI still gets through; and the
// codec server decodes that history for the Web UI and for the CLI's `--codec-endpoint`; an audit without the key
// names DH_PAYLOAD_KEY. A signal or update the worker cannot decrypt is refused by the session, never a failed task.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type { Payload, SerializationContext } from '@temporalio/common';
import { Client, type WorkflowHandle } from '@temporalio/client';
import {
  AesGcmPayloadCodec,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA,
  PayloadCodecError,
  PayloadCodecErrorCode,
  dataConverterFromEnv,
  parsePayloadKey,
  payloadCodecFromEnv,
  workerDataConverterFromEnv,
} from '../../src/codec/aes-gcm-codec.js';
import { startCodecServer, type CodecServer } from '../../src/codec/codec-server.js';
import { auditSession } from '../../src/audit/audit-session.js';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import type { EventOf, SessionEvent } from '../../src/core/index.js';
import { followupSignal, sendUpdate, sessionWorkflowId, stateQuery } from '../../src/shared/session-messages.js';
import { UNDECRYPTABLE_ENCODING, UNDECRYPTABLE_REASON_METADATA } from '../../src/shared/undecryptable-payload.js';
import { historyToJSONObject } from '../helpers/scenario-runtime.js';
import { echoTool } from '../helpers/test-tools.js';
import {
  expectProviderSawTheLog,
  startHarness,
  waitForState,
  waitForTurnEnd,
  type Harness,
} from '../helpers/session-harness.js';

const run = promisify(execFile);
const UI_ORIGIN = 'http://localhost:8233';
/** Marks every plaintext the session carries, so the history can be searched for it. */
const MARK = 'PLAINTEXT-MARK';
const SESSION = 'codec-session';

const utf8 = (bytes: Uint8Array | null | undefined): string => Buffer.from(bytes ?? new Uint8Array()).toString('utf8');
const jsonPayload = (value: unknown): Payload => ({
  metadata: { encoding: Buffer.from('json/plain') },
  data: Buffer.from(JSON.stringify(value)),
});
const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T): EventOf<T>[] =>
  events.filter((e): e is EventOf<T> => e.type === type);

/** A payload in protobuf JSON, as history JSON and the codec-server protocol carry it. */
interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}
const b64 = (text: string | undefined): string => Buffer.from(text ?? '', 'base64').toString('utf8');

/** Every payload in a history's JSON form, with the path of the event attribute holding it. */
function payloadsOf(json: unknown): Array<{ path: string; payload: JsonPayload }> {
  const out: Array<{ path: string; payload: JsonPayload }> = [];
  const walk = (node: unknown, path: string): void => {
    if (Array.isArray(node)) return node.forEach((child, i) => walk(child, `${path}[${i}]`));
    if (node === null || typeof node !== 'object') return;
    const record = node as Record<string, unknown> & JsonPayload;
    const metadata = record.metadata;
    if (metadata !== null && typeof metadata === 'object' && 'encoding' in metadata) {
      out.push({ path, payload: record });
      return;
    }
    for (const [key, child] of Object.entries(record)) walk(child, `${path}.${key}`);
  };
  walk(json, '$');
  return out;
}

describe('the AES-256-GCM payload codec', () => {
  const key = randomBytes(32);
  const codec = new AesGcmPayloadCodec({ key });

  it('seals each payload under a fresh IV and opens it again; plain payloads pass through decode', async () => {
    const plain = jsonPayload({ content: MARK });
    const [a, b] = await codec.encode([plain, plain]);
    expect(utf8(a?.metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(utf8(a?.metadata?.[KEY_ID_METADATA])).toBe(codec.keyId);
    expect(Object.keys(a?.metadata ?? {}).sort()).toEqual(['encoding', KEY_ID_METADATA].sort());
    expect(Buffer.from(a?.data ?? []).equals(Buffer.from(b?.data ?? []))).toBe(false); // random IV
    expect(utf8(a?.data)).not.toContain(MARK);
    expect(utf8(a?.data)).not.toContain('json/plain'); // the original metadata is sealed too
    const [opened, passed] = await codec.decode([a as Payload, plain]);
    expect(utf8(opened?.metadata?.encoding)).toBe('json/plain');
    expect(JSON.parse(utf8(opened?.data))).toEqual({ content: MARK });
    expect(passed).toBe(plain);
  });

  it('refuses a payload of an unknown key or with altered bytes, naming the key id, never the key', async () => {
    const [sealed] = await codec.encode([jsonPayload('x')]);
    const other = new AesGcmPayloadCodec({ key: randomBytes(32) });
    await expect(other.decode([sealed as Payload])).rejects.toMatchObject({
      code: PayloadCodecErrorCode.UnknownKey,
      message: expect.stringContaining(codec.keyId) as unknown,
    });
    const data = Buffer.from(sealed?.data ?? []);
    data[20] = (data[20] ?? 0) ^ 1;
    await expect(codec.decode([{ ...sealed, data }])).rejects.toMatchObject({
      code: PayloadCodecErrorCode.Undecryptable,
    });
    // A rotated key still opens what it sealed.
    const rotated = new AesGcmPayloadCodec({ key: randomBytes(32), previousKeys: [key] });
    const [opened] = await rotated.decode([sealed as Payload]);
    expect(JSON.parse(utf8(opened?.data))).toBe('x');
  });

  it("with onUndecryptable 'mark', a workflow's input it cannot open becomes a marker; activity payloads and clients still throw", async () => {
    const marking = new AesGcmPayloadCodec({ key, onUndecryptable: 'mark' });
    const stranger = new AesGcmPayloadCodec({ key: randomBytes(32) });
    const plain = jsonPayload({ content: MARK });
    const [foreign] = (await stranger.encode([plain])) as [Payload];
    const [sealed] = (await codec.encode([plain])) as [Payload];
    const tampered = { ...sealed, data: Buffer.from(sealed.data ?? []) };
    tampered.data[tampered.data.length - 1] = (tampered.data.at(-1) ?? 0) ^ 1; // the tag's last byte
    // The contexts the SDK passes: a workflow's own payloads (start input, signal, update, query
    // arguments); an activity's input (activity worker) or result (workflow worker); none at all.
    const workflow: SerializationContext = { type: 'workflow', namespace: 'default', workflowId: 'session-x' };
    const activity: SerializationContext = {
      type: 'activity',
      namespace: 'default',
      workflowId: 'session-x',
      activityId: '1',
      isLocal: false,
    };

    const [unknownKey, badTag, opened, passed] = await marking.decode([foreign, tampered, sealed, plain], workflow);
    const reason = (p: Payload | undefined) => utf8(p?.metadata?.[UNDECRYPTABLE_REASON_METADATA]);
    expect(utf8(unknownKey?.metadata?.encoding)).toBe(UNDECRYPTABLE_ENCODING);
    expect(reason(unknownKey)).toMatch(
      new RegExp(`^PAYLOAD_KEY_UNKNOWN: a payload is encrypted with key id "${stranger.keyId}", which this codec`),
    );
    expect(utf8(badTag?.metadata?.encoding)).toBe(UNDECRYPTABLE_ENCODING);
    expect(reason(badTag)).toBe(
      `PAYLOAD_UNDECRYPTABLE: an encrypted payload (key id "${codec.keyId}") fails authentication: it was altered, or sealed under another key with the same id`,
    );
    for (const marker of [unknownKey, badTag]) {
      expect(marker?.data).toHaveLength(0);
      expect(reason(marker)).not.toContain(key.toString('base64'));
      expect(reason(marker)).not.toContain(key.toString('hex'));
    }
    expect(JSON.parse(utf8(opened?.data))).toEqual({ content: MARK });
    expect(passed).toBe(plain);

    // An activity's payload, a decode without context, and a client's codec (no `mark`) still throw.
    await expect(marking.decode([foreign], activity)).rejects.toMatchObject({ code: PayloadCodecErrorCode.UnknownKey });
    await expect(marking.decode([tampered], { ...activity, isLocal: true })).rejects.toMatchObject({
      code: PayloadCodecErrorCode.Undecryptable,
    });
    await expect(marking.decode([foreign])).rejects.toMatchObject({ code: PayloadCodecErrorCode.UnknownKey });
    await expect(codec.decode([tampered], workflow)).rejects.toMatchObject({
      code: PayloadCodecErrorCode.Undecryptable,
    });

    // From the environment: the worker's converter marks, the clients' throws.
    const env = { DH_PAYLOAD_KEY: key.toString('base64') };
    const [workerCodec] = workerDataConverterFromEnv(env)?.payloadCodecs ?? [];
    const [clientCodec] = dataConverterFromEnv(env)?.payloadCodecs ?? [];
    expect(utf8((await workerCodec?.decode([foreign], workflow))?.[0]?.metadata?.encoding)).toBe(
      UNDECRYPTABLE_ENCODING,
    );
    await expect(workerCodec?.decode([foreign], activity)).rejects.toMatchObject({
      code: PayloadCodecErrorCode.UnknownKey,
    });
    await expect(clientCodec?.decode([foreign], workflow)).rejects.toMatchObject({
      code: PayloadCodecErrorCode.UnknownKey,
    });
    expect(workerDataConverterFromEnv({})).toBeUndefined();
  });

  it('reads its key from DH_PAYLOAD_KEY, with a clear error for a bad one', () => {
    expect(payloadCodecFromEnv({})).toBeUndefined();
    expect(dataConverterFromEnv({ DH_PAYLOAD_KEY: '' })).toBeUndefined();
    expect(payloadCodecFromEnv({ DH_PAYLOAD_KEY: key.toString('base64') })?.keyId).toBe(codec.keyId);
    expect(payloadCodecFromEnv({ DH_PAYLOAD_KEY: key.toString('base64url') })?.keyId).toBe(codec.keyId);
    const short = randomBytes(16).toString('base64');
    expect(() => parsePayloadKey(short)).toThrow(/DH_PAYLOAD_KEY decodes to 16 bytes; it must be a 256-bit key/);
    expect(() => parsePayloadKey('not a key!')).toThrow(/DH_PAYLOAD_KEY is not base64/);
    try {
      payloadCodecFromEnv({ DH_PAYLOAD_KEY: short });
    } catch (error) {
      expect((error as Error).message).not.toContain(short);
      expect(error).toMatchObject({ code: PayloadCodecErrorCode.InvalidKey });
    }
    expect(() => new AesGcmPayloadCodec({ key: randomBytes(31) })).toThrow(/must be 32 bytes/);
  });
});

describe('an encrypted session on a real Temporal server', () => {
  const codec = new AesGcmPayloadCodec({ key: randomBytes(32) });
  let h: Harness;
  let handle: WorkflowHandle;
  let server: CodecServer;
  const cli = (...args: string[]) =>
    run(
      inject('temporalCliPath'),
      [...args, '--address', inject('temporalAddress'), '--namespace', inject('temporalNamespace')],
      { timeout: 30_000, maxBuffer: 64 * 1024 * 1024 },
    );

  beforeAll(async () => {
    h = await startHarness({
      dataConverter: { payloadCodecs: [codec] },
      tools: [echoTool],
      script: {
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: MARK },
            toolCalls: [{ id: 'echo-1', name: 'echo', arguments: { text: `${MARK} tool argument` } }],
          },
          { match: { lastUserContains: MARK }, text: `${MARK} answer` },
          { match: { lastUserContains: 'from the temporal CLI' }, text: 'the CLI message arrived' },
        ],
      },
    });
    server = await startCodecServer({ codec, port: 0, origins: [UI_ORIGIN] });
    handle = await h.start(SESSION);
    await handle.executeUpdate(sendUpdate, {
      args: [{ content: `${MARK} note by update`, target: 'next-step', wakeup: false }],
    });
    await handle.signal(followupSignal, { content: `${MARK} plan: call echo` });
    await waitForTurnEnd(h.store, SESSION, 1);
  });
  afterAll(async () => {
    await server?.close();
    await h?.stop();
  });

  it('the session works end to end through the codec', async () => {
    const events = await h.store.read(SESSION);
    expect(ofType(events, 'tool/result').map((r) => r.output)).toEqual([`echo: "${MARK} tool argument"`]);
    expect(ofType(events, 'turn/end').map((e) => e.reason)).toEqual(['completed']);
    expect(ofType(events, 'user/message').map((m) => m.content)).toEqual([
      `${MARK} plan: call echo`,
      `${MARK} note by update`,
    ]);
    const state = await waitForState(handle, (s) => s.status === 'idle');
    expect(state.sessionId).toBe(SESSION); // the query result came back through the codec
    await expectProviderSawTheLog(h, [SESSION]);
    // The mirror check reads activity results from history (and the local openSession's from its marker):
    // it decodes them with the client's codecs, and every event from seq 0 on has its receipt.
    const mirror = await checkHistoryMirror(h.client, h.store, SESSION);
    expect(mirror.problem).toBeNull();
    expect(mirror.uncoveredPrefix).toBe(0);
  });

  it('audited without the key, the mirror check fails naming DH_PAYLOAD_KEY; with another key, naming the key id', async () => {
    const clientWith = (dataConverter?: { payloadCodecs: AesGcmPayloadCodec[] }) =>
      new Client({
        connection: h.client.connection,
        namespace: h.client.options.namespace,
        ...(dataConverter ? { dataConverter } : {}),
      });
    const keyless = await auditSession({ store: h.store, sessionId: SESSION, client: clientWith() }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(keyless).toBeInstanceOf(PayloadCodecError);
    expect(keyless).toMatchObject({ code: PayloadCodecErrorCode.MissingKey, details: { keyId: codec.keyId } });
    expect((keyless as Error).message).toContain('set DH_PAYLOAD_KEY to the key the workers encrypt with');
    expect((keyless as Error).message).toContain('dh audit --no-mirror');
    const stranger = new AesGcmPayloadCodec({ key: randomBytes(32) });
    await expect(
      auditSession({ store: h.store, sessionId: SESSION, client: clientWith({ payloadCodecs: [stranger] }) }),
    ).rejects.toMatchObject({ code: PayloadCodecErrorCode.UnknownKey, details: { keyId: codec.keyId } });
    // With the workers' key the same audit passes, mirror included.
    const keyed = await auditSession({ store: h.store, sessionId: SESSION, client: h.client });
    expect(keyed.failures).toEqual([]);
    expect(keyed.summary.mirror?.status).toBe('ok');
  });

  it('the history holds ciphertext: every input, signal, update and activity payload is encrypted', async () => {
    const json = historyToJSONObject(await handle.fetchHistory());
    const found = payloadsOf(json);
    const sealed = found.filter(({ payload }) => b64(payload.metadata?.encoding) === ENCRYPTED_ENCODING);
    const plain = found.filter(({ payload }) => b64(payload.metadata?.encoding) !== ENCRYPTED_ENCODING);
    const kinds = (list: typeof found) => [
      ...new Set(list.map(({ path }) => /\.(\w+EventAttributes)\./.exec(path)?.[1])),
    ];
    // What carries data is sealed...
    expect(kinds(sealed)).toEqual(
      expect.arrayContaining([
        'workflowExecutionStartedEventAttributes',
        'workflowExecutionSignaledEventAttributes',
        'workflowExecutionUpdateAcceptedEventAttributes',
        'workflowExecutionUpdateCompletedEventAttributes',
        'activityTaskScheduledEventAttributes',
        'activityTaskCompletedEventAttributes',
      ]),
    );
    for (const { payload } of sealed) {
      expect(b64(payload.metadata?.[KEY_ID_METADATA])).toBe(codec.keyId);
      expect(() => JSON.parse(b64(payload.data))).toThrow();
    }
    // ... and what stays readable is what Temporal itself must read: search attributes and the SDK's
    // patch markers (written by the worker's core, not by the codec), none of them carrying session data.
    for (const { path } of plain) expect(path).toMatch(/searchAttributes|markerRecordedEventAttributes/);
    expect(JSON.stringify(json)).not.toContain(MARK);
    for (const { payload } of found) expect(b64(payload.data)).not.toContain(MARK);
  });

  it('a signal with plain JSON input from the `temporal` CLI is accepted and processed', async () => {
    await cli(
      'workflow',
      'signal',
      '--workflow-id',
      sessionWorkflowId(SESSION),
      '--name',
      'followup',
      '--input',
      JSON.stringify({ content: 'a message from the temporal CLI', source: 'ops' }),
    );
    const events = await waitForTurnEnd(h.store, SESSION, 2);
    expect(ofType(events, 'user/message').at(-1)).toMatchObject({
      content: 'a message from the temporal CLI',
      source: 'ops',
    });
    expect(ofType(events, 'turn/end').map((e) => `${e.turn}:${e.reason}`)).toEqual(['1:completed', '2:completed']);
    expect((await handle.query(stateQuery)).rejectedSignals).toBe(0);
    // It is in history as the CLI sent it: plain JSON, passed through by the codec.
    const signals = payloadsOf(historyToJSONObject(await handle.fetchHistory())).filter(({ path }) =>
      path.includes('workflowExecutionSignaledEventAttributes'),
    );
    expect(signals.map(({ payload }) => b64(payload.metadata?.encoding))).toEqual([ENCRYPTED_ENCODING, 'json/plain']);
    await expectProviderSawTheLog(h, [SESSION]);
  });

  it('the codec server decodes a payload of that history over HTTP, with CORS for the UI', async () => {
    const json = historyToJSONObject(await handle.fetchHistory());
    const signal = payloadsOf(json).find(({ path }) => path.includes('workflowExecutionSignaledEventAttributes'));
    expect(b64(signal?.payload.metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
    const post = (path: string, body: unknown, origin = UI_ORIGIN) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-namespace': 'default', origin },
        body: JSON.stringify(body),
      });

    const decoded = await post('/decode', { payloads: [signal?.payload] });
    expect(decoded.status).toBe(200);
    expect(decoded.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    const { payloads } = (await decoded.json()) as { payloads: JsonPayload[] };
    expect(b64(payloads[0]?.metadata?.encoding)).toBe('json/plain');
    expect(JSON.parse(b64(payloads[0]?.data))).toEqual({ content: `${MARK} plan: call echo` });

    // encode → decode round trip; a plain payload passes through decode untouched.
    const plain = { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: btoa('"hi"') };
    const encoded = (await (await post('/encode', { payloads: [plain] })).json()) as { payloads: JsonPayload[] };
    expect(b64(encoded.payloads[0]?.metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
    const back = (await (await post('/decode', { payloads: [encoded.payloads[0], plain] })).json()) as {
      payloads: JsonPayload[];
    };
    expect(back.payloads).toEqual([plain, plain]);

    // The browser's preflight, a foreign origin, and bad requests.
    const preflight = await fetch(`${server.url}/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: UI_ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-namespace',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    expect(preflight.headers.get('access-control-allow-headers')).toBe('content-type,x-namespace');
    const foreign = await post('/decode', { payloads: [signal?.payload] }, 'http://evil.example');
    expect(foreign.status).toBe(403);
    expect(await foreign.text()).not.toContain(MARK);
    expect((await post('/decode', { nope: 1 })).status).toBe(400);
    expect((await post('/elsewhere', { payloads: [] })).status).toBe(404);
    const otherKey = new AesGcmPayloadCodec({ key: randomBytes(32) });
    const [foreignSealed] = await otherKey.encode([jsonPayload(1)]);
    const refused = await post('/decode', {
      payloads: [
        {
          metadata: Object.fromEntries(
            Object.entries(foreignSealed?.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
          ),
          data: Buffer.from(foreignSealed?.data ?? []).toString('base64'),
        },
      ],
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toContain(otherKey.keyId);
  });

  it('the `temporal` CLI shows the history decoded through --codec-endpoint', async () => {
    const args = ['workflow', 'show', '--workflow-id', sessionWorkflowId(SESSION), '--output', 'json'];
    const encodings = (stdout: string) =>
      payloadsOf(JSON.parse(stdout)).map(({ payload }) => b64(payload.metadata?.encoding));
    const without = await cli(...args);
    expect(encodings(without.stdout)).toContain(ENCRYPTED_ENCODING);
    const withCodec = await cli(...args, '--codec-endpoint', server.url);
    expect(encodings(withCodec.stdout)).not.toContain(ENCRYPTED_ENCODING);
    const decoded = payloadsOf(JSON.parse(withCodec.stdout)).map(({ payload }) => b64(payload.data));
    expect(decoded).toContain(JSON.stringify({ content: `${MARK} plan: call echo` }));
    expect(decoded.some((data) => data.includes(`${MARK} note by update`))).toBe(true); // the update's input
  });
});

describe('signals and updates the worker cannot decrypt, sent by the `temporal` CLI (real Temporal)', () => {
  const key = randomBytes(32);
  /** The client's codec throws on what it cannot open; the worker's marks a workflow's inputs. */
  const clientCodec = new AesGcmPayloadCodec({ key });
  const workerCodec = new AesGcmPayloadCodec({ key, onUndecryptable: 'mark' });
  const stranger = new AesGcmPayloadCodec({ key: randomBytes(32) });
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({
      dataConverter: { payloadCodecs: [clientCodec] },
      workerDataConverter: { payloadCodecs: [workerCodec] },
      script: { mode: 'match', replies: [{ match: { lastUserContains: 'still alive' }, text: 'yes', repeat: 100 }] },
    });
  });
  afterAll(async () => h?.stop());

  /** Runs the `temporal` CLI; resolves with its exit code and output, its logfmt quotes unescaped. */
  const temporal = async (...args: string[]): Promise<{ code: number; output: string }> => {
    const full = [...args, '--address', inject('temporalAddress'), '--namespace', inject('temporalNamespace')];
    try {
      const { stdout, stderr } = await run(inject('temporalCliPath'), full, { timeout: 30_000 });
      return { code: 0, output: `${stdout}${stderr}`.replaceAll('\\"', '"') };
    } catch (error) {
      const failed = error as { code?: number; stdout?: string; stderr?: string };
      return {
        code: typeof failed.code === 'number' ? failed.code : -1,
        output: `${failed.stdout}${failed.stderr}`.replaceAll('\\"', '"'),
      };
    }
  };

  /** The CLI flags that send `payload` as it is (an encrypted payload built here). */
  const sealedFlags = (payload: Payload): string[] => [
    '--input-meta',
    `encoding=${utf8(payload.metadata?.encoding)}`,
    '--input-meta',
    `${KEY_ID_METADATA}=${utf8(payload.metadata?.[KEY_ID_METADATA])}`,
    '--input-base64',
    '--input',
    Buffer.from(payload.data ?? []).toString('base64'),
  ];

  /** The two poisons for a JSON body: sealed under a key the worker does not hold; sealed right, tag altered. */
  const poisons = async (body: unknown): Promise<Array<{ what: string; payload: Payload; reason: string }>> => {
    const [foreign] = (await stranger.encode([jsonPayload(body)])) as [Payload];
    const [sealed] = (await clientCodec.encode([jsonPayload(body)])) as [Payload];
    const data = Buffer.from(sealed.data ?? []);
    data[data.length - 1] = (data.at(-1) ?? 0) ^ 1;
    return [
      {
        what: 'an unknown key',
        payload: foreign,
        reason: `payload cannot be decrypted: PAYLOAD_KEY_UNKNOWN: a payload is encrypted with key id "${stranger.keyId}", which this codec does not hold`,
      },
      {
        what: 'a bad tag',
        payload: { ...sealed, data },
        reason: `payload cannot be decrypted: PAYLOAD_UNDECRYPTABLE: an encrypted payload (key id "${clientCodec.keyId}") fails authentication`,
      },
    ];
  };

  const failedWorkflowTasks = async (handle: WorkflowHandle): Promise<number> =>
    ((await handle.fetchHistory()).events ?? []).filter((e) => e.workflowTaskFailedEventAttributes).length;

  const open = async (sessionId: string): Promise<WorkflowHandle> => {
    const handle = await h.start(sessionId);
    await waitForState(handle, (s) => s.head > 0);
    return handle;
  };

  /** A valid (encrypted) followup runs turn `turn` to completion. */
  const expectStillUsable = async (handle: WorkflowHandle, sessionId: string, turn: number) => {
    await handle.signal(followupSignal, { content: `still alive (${turn})?` });
    const events = await waitForTurnEnd(h.store, sessionId, turn);
    expect(ofType(events, 'turn/end').at(-1)).toMatchObject({ turn, reason: 'completed' });
  };

  it.each(['followup', 'steer', 'inject'])(
    'signal %s: refused and counted, naming the key problem; no failed workflow task; the session goes on',
    async (name) => {
      const sessionId = `undecryptable-${name}`;
      const handle = await open(sessionId);
      for (const [i, poison] of (await poisons({ content: `${MARK} poison` })).entries()) {
        const sent = await temporal(
          'workflow',
          'signal',
          '--workflow-id',
          sessionWorkflowId(sessionId),
          '--name',
          name,
          ...sealedFlags(poison.payload),
        );
        expect(sent, poison.what).toMatchObject({ code: 0 });
        const state = await waitForState(handle, (s) => s.rejectedSignals === i + 1);
        expect(state.lastRejection?.startsWith(`${name}: ${poison.reason}`), String(state.lastRejection)).toBe(true);
        expect(await failedWorkflowTasks(handle), poison.what).toBe(0);
        await expectStillUsable(handle, sessionId, i + 1);
      }
      expect(JSON.stringify(await h.store.read(sessionId))).not.toContain(MARK);
    },
  );

  it.each([
    ['send', 'send', { content: `${MARK} poison`, target: 'next-turn', wakeup: true }],
    ['approve', 'approval', { callId: 'c1', decision: 'approve' }],
    ['compact', 'compact request', { prune: true }],
  ] as const)(
    'update %s: refused with INVALID_PAYLOAD naming the key problem; nothing in history; the session goes on',
    async (name, what, body) => {
      const sessionId = `undecryptable-update-${name}`;
      const handle = await open(sessionId);
      for (const [i, poison] of (await poisons(body)).entries()) {
        const refused = await temporal(
          'workflow',
          'update',
          'execute',
          '--workflow-id',
          sessionWorkflowId(sessionId),
          '--name',
          name,
          ...sealedFlags(poison.payload),
        );
        expect(refused.code, poison.what).not.toBe(0);
        expect(refused.output, poison.what).toContain(`unable to update workflow: invalid ${what}: ${poison.reason}`);
        expect(refused.output, poison.what).toContain('(type: INVALID_PAYLOAD, retryable: false)');
        const events = (await handle.fetchHistory()).events ?? [];
        expect(events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes)).toHaveLength(0);
        expect(await failedWorkflowTasks(handle), poison.what).toBe(0);
        await expectStillUsable(handle, sessionId, i + 1);
      }
    },
  );
});
