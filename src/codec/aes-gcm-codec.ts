// Payload encryption: a Temporal PayloadCodec that seals every payload with AES-256-GCM before it reaches
// the server (so history, signals and activity inputs/results are ciphertext at rest), and that lets
// payloads it did not encode through on decode (plain JSON from the `temporal` CLI or an older client).
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { DataConverter, Payload, PayloadCodec, SerializationContext } from '@temporalio/common';
import proto from '@temporalio/proto';
import { DhError } from '../core/errors.js';
import { UNDECRYPTABLE_ENCODING, UNDECRYPTABLE_REASON_METADATA } from '../shared/undecryptable-payload.js';

/** `metadata.encoding` of a payload this codec sealed. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** `metadata` key naming the key a payload was sealed with (see `keyIdOf`). */
export const KEY_ID_METADATA = 'encryption-key-id';
/** The key: 32 random bytes in base64 (`openssl rand -base64 32`). */
export const PAYLOAD_KEY_ENV = 'DH_PAYLOAD_KEY';
/** Retired keys still accepted on decode, comma-separated, while old histories are around (rotation). */
export const PREVIOUS_PAYLOAD_KEYS_ENV = 'DH_PAYLOAD_KEY_PREVIOUS';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const ALGORITHM = 'aes-256-gcm';

export const PayloadCodecErrorCode = {
  InvalidKey: 'PAYLOAD_KEY_INVALID',
  UnknownKey: 'PAYLOAD_KEY_UNKNOWN',
  Undecryptable: 'PAYLOAD_UNDECRYPTABLE',
  /** A sealed payload reached a reader with no codec at all: DH_PAYLOAD_KEY is unset where it is needed. */
  MissingKey: 'PAYLOAD_KEY_MISSING',
} as const;

/** A bad key, or a payload this codec cannot open. Messages never contain key material. */
export class PayloadCodecError extends DhError {}

const PayloadMessage = proto.temporal.api.common.v1.Payload;
const utf8 = (text: string): Uint8Array => Buffer.from(text, 'utf8');
const text = (bytes: Uint8Array | null | undefined): string | undefined =>
  bytes ? Buffer.from(bytes).toString('utf8') : undefined;

/** The key's public id: the first 8 bytes of its SHA-256, in hex (names the key, reveals nothing usable). */
export function keyIdOf(key: Uint8Array): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

export interface AesGcmCodecOptions {
  /** 32 bytes. */
  readonly key: Uint8Array;
  /** Retired keys, accepted on decode only. */
  readonly previousKeys?: readonly Uint8Array[];
  /**
   * What decode does with a sealed payload it cannot open (an unknown key id, a bad tag): `throw` (the
   * default), or `mark` — a worker's choice — to hand back a marker payload (encoding
   * `dh/undecryptable`, the reason in `dh-reason`) when the payload is a workflow's input (a decode
   * with a workflow serialization context). The session workflow refuses that message by the reason;
   * a throw there would fail every workflow task of the session. Everything else still throws.
   */
  readonly onUndecryptable?: 'throw' | 'mark';
}

/**
 * Wire format of a sealed payload:
 * - `metadata`: `encoding: binary/encrypted`, `encryption-key-id: <keyIdOf(key)>` (nothing else);
 * - `data`: a 12-byte random IV, then the AES-256-GCM ciphertext of the whole original payload serialized as a
 *   `temporal.api.common.v1.Payload` protobuf (its metadata too: the original encoding is not visible),
 *   then the 16-byte tag. The key id is the additional authenticated data.
 */
export class AesGcmPayloadCodec implements PayloadCodec {
  readonly keyId: string;
  private readonly key: Buffer;
  private readonly keys: ReadonlyMap<string, Buffer>;
  private readonly onUndecryptable: 'throw' | 'mark';

  constructor(options: AesGcmCodecOptions) {
    this.onUndecryptable = options.onUndecryptable ?? 'throw';
    this.key = checkKeyLength(options.key, 'the payload key');
    this.keyId = keyIdOf(this.key);
    const keys = new Map<string, Buffer>([[this.keyId, this.key]]);
    for (const [i, previous] of (options.previousKeys ?? []).entries()) {
      const checked = checkKeyLength(previous, `previous payload key #${i + 1}`);
      keys.set(keyIdOf(checked), checked);
    }
    this.keys = keys;
  }

  encode(payloads: Payload[]): Promise<Payload[]> {
    return settle(() => payloads.map((payload) => this.seal(payload)));
  }

  /**
   * Opens what this codec (or a previous key) sealed; any other payload passes through unchanged. One it
   * cannot open throws, or becomes the undecryptable marker (see `onUndecryptable`).
   */
  decode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    // Only a workflow's own inputs (signal and update arguments among them) are marked: an activity's
    // input or result that cannot be opened must fail loudly, and a client must see the error.
    const mark = this.onUndecryptable === 'mark' && context?.type === 'workflow';
    return settle(() =>
      payloads.map((payload) => {
        if (!isSealed(payload)) return payload;
        if (!mark) return this.open(payload);
        try {
          return this.open(payload);
        } catch (error) {
          if (!(error instanceof PayloadCodecError)) throw error;
          return undecryptableMarker(error);
        }
      }),
    );
  }

  private seal(payload: Payload): Payload {
    const plain = PayloadMessage.encode(payload).finish();
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(utf8(this.keyId));
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: { encoding: utf8(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: utf8(this.keyId) },
      data: sealed,
    };
  }

  private open(payload: Payload): Payload {
    const keyId = text(payload.metadata?.[KEY_ID_METADATA]) ?? '';
    const key = this.keys.get(keyId);
    if (!key) {
      throw new PayloadCodecError(
        PayloadCodecErrorCode.UnknownKey,
        `a payload is encrypted with key id "${keyId}", which this codec does not hold (it has ${[...this.keys.keys()].map((id) => `"${id}"`).join(', ')}); ` +
          `set ${PAYLOAD_KEY_ENV} (or ${PREVIOUS_PAYLOAD_KEYS_ENV}) to the key it was written with`,
        { keyId },
      );
    }
    const data = Buffer.from(payload.data ?? new Uint8Array());
    if (data.length < IV_BYTES + TAG_BYTES) {
      throw new PayloadCodecError(
        PayloadCodecErrorCode.Undecryptable,
        `an encrypted payload is ${data.length} bytes, shorter than its IV and tag`,
        { keyId, bytes: data.length },
      );
    }
    let plain: Buffer;
    try {
      const decipher = createDecipheriv(ALGORITHM, key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(utf8(keyId));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new PayloadCodecError(
        PayloadCodecErrorCode.Undecryptable,
        `an encrypted payload (key id "${keyId}") fails authentication: it was altered, or sealed under another key with the same id`,
        { keyId },
      );
    }
    let inner: proto.temporal.api.common.v1.Payload;
    try {
      inner = PayloadMessage.decode(plain);
    } catch {
      throw new PayloadCodecError(
        PayloadCodecErrorCode.Undecryptable,
        `an encrypted payload (key id "${keyId}") opens to bytes that are not a payload`,
        { keyId },
      );
    }
    return {
      metadata: inner.metadata,
      data: inner.data,
      ...(inner.externalPayloads.length > 0 ? { externalPayloads: inner.externalPayloads } : {}),
    };
  }
}

/** The payload decode hands a workflow in place of one it cannot open: the error's message, no key material. */
function undecryptableMarker(error: PayloadCodecError): Payload {
  return {
    metadata: {
      encoding: utf8(UNDECRYPTABLE_ENCODING),
      [UNDECRYPTABLE_REASON_METADATA]: utf8(`${error.code}: ${error.message}`),
    },
    data: new Uint8Array(),
  };
}

/** The synchronous work as a promise (a throw becomes a rejection). */
function settle<T>(run: () => T): Promise<T> {
  try {
    return Promise.resolve(run());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}

/**
 * Throws PAYLOAD_KEY_MISSING when `payload` is still sealed after every codec the reader has ran on it
 * (none opens it: the reader runs without DH_PAYLOAD_KEY); `what` says what was being read.
 */
export function refuseSealed(payload: Payload, what: string): void {
  if (!isSealed(payload)) return;
  const keyId = text(payload.metadata?.[KEY_ID_METADATA]) ?? '';
  throw new PayloadCodecError(
    PayloadCodecErrorCode.MissingKey,
    `${what} is encrypted (key id "${keyId}") and ${PAYLOAD_KEY_ENV} is not set here: ` +
      `set ${PAYLOAD_KEY_ENV} to the key the workers encrypt with`,
    { keyId, variable: PAYLOAD_KEY_ENV },
  );
}

function isSealed(payload: Payload): boolean {
  return text(payload.metadata?.encoding) === ENCRYPTED_ENCODING;
}

function checkKeyLength(key: Uint8Array, what: string): Buffer {
  if (key.length !== KEY_BYTES) {
    throw new PayloadCodecError(
      PayloadCodecErrorCode.InvalidKey,
      `${what} must be ${KEY_BYTES} bytes (AES-256), not ${key.length}`,
      { bytes: key.length },
    );
  }
  return Buffer.from(key);
}

/** Decodes a base64 (or base64url) key, with an error that names `name` and never shows the value. */
export function parsePayloadKey(value: string, name = PAYLOAD_KEY_ENV): Uint8Array {
  const trimmed = value.trim();
  const hint = 'generate one with `openssl rand -base64 32`';
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed) || trimmed.replace(/=+$/, '').length % 4 === 1) {
    throw new PayloadCodecError(
      PayloadCodecErrorCode.InvalidKey,
      `${name} is not base64: it must be a 256-bit key as 32 bytes in base64 (${hint})`,
      { variable: name },
    );
  }
  const bytes = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (bytes.length !== KEY_BYTES) {
    throw new PayloadCodecError(
      PayloadCodecErrorCode.InvalidKey,
      `${name} decodes to ${bytes.length} bytes; it must be a 256-bit key, 32 bytes in base64 (${hint})`,
      { variable: name, bytes: bytes.length },
    );
  }
  return bytes;
}

/**
 * The codec configured by the environment: `DH_PAYLOAD_KEY` (and optionally `DH_PAYLOAD_KEY_PREVIOUS`),
 * or undefined when no key is set (payloads are then stored as plain JSON). A bad key throws.
 */
export function payloadCodecFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  options: Pick<AesGcmCodecOptions, 'onUndecryptable'> = {},
): AesGcmPayloadCodec | undefined {
  const value = env[PAYLOAD_KEY_ENV];
  if (value === undefined || value.trim() === '') return undefined;
  const previous = (env[PREVIOUS_PAYLOAD_KEYS_ENV] ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part, i) => parsePayloadKey(part, `${PREVIOUS_PAYLOAD_KEYS_ENV} (entry ${i + 1})`));
  return new AesGcmPayloadCodec({ key: parsePayloadKey(value), previousKeys: previous, ...options });
}

/**
 * The data converter for clients (`new Client({ dataConverter })`): the codec from the environment, or
 * undefined for the SDK's default. A payload it cannot open throws.
 */
export function dataConverterFromEnv(env: NodeJS.ProcessEnv = process.env): DataConverter | undefined {
  const codec = payloadCodecFromEnv(env);
  return codec ? { payloadCodecs: [codec] } : undefined;
}

/**
 * The data converter for a worker (`createSessionWorker({ dataConverter })`): as `dataConverterFromEnv`,
 * but a signal or update argument it cannot open reaches the workflow as the undecryptable marker, which
 * refuses that message (`onUndecryptable: 'mark'`), instead of failing every workflow task of the session.
 */
export function workerDataConverterFromEnv(env: NodeJS.ProcessEnv = process.env): DataConverter | undefined {
  const codec = payloadCodecFromEnv(env, { onUndecryptable: 'mark' });
  return codec ? { payloadCodecs: [codec] } : undefined;
}

/** Client options carrying the payload codec when DH_PAYLOAD_KEY is set (spread into `new Client({...})`). */
export function clientDataConverter(env: NodeJS.ProcessEnv = process.env): { dataConverter?: DataConverter } {
  const dataConverter = dataConverterFromEnv(env);
  return dataConverter ? { dataConverter } : {};
}
