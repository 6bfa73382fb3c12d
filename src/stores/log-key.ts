// The log's trust root: an optional secret (DH_LOG_KEY) under which the store MACs each row's chain digest,
// so a forger who rewrites rows and recomputes every digest and the whole chain still cannot forge a row.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { inspect } from 'node:util';
import { DhError } from '../core/errors.js';

/** The key: 32 random bytes in base64 (`openssl rand -base64 32`), as for DH_PAYLOAD_KEY. */
export const LOG_KEY_ENV = 'DH_LOG_KEY';

export const LOG_KEY_INVALID = 'LOG_KEY_INVALID';

/** A bad key value. Its message names the variable, never the value. */
export class LogKeyError extends DhError {}

const KEY_BYTES = 32;

/** How a row's MAC compares with what this key computes for its chain digest. */
export type MacVerdict =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: 'missing' | 'malformed' | 'mismatch' }
  | { readonly ok: false; readonly reason: 'other-key'; readonly keyId: string };

export class LogKey {
  /**
   * The key's public name: 8 bytes of a sha256 over a label and the key, in hex. The label keeps it apart
   * from the payload codec's key id, so the same bytes reused for both keys do not show as one id.
   */
  readonly keyId: string;
  readonly #key: Buffer;

  constructor(key: Uint8Array) {
    if (key.length !== KEY_BYTES) {
      throw new LogKeyError(LOG_KEY_INVALID, `the log key must be ${KEY_BYTES} bytes, not ${key.length}`, {
        bytes: key.length,
      });
    }
    this.#key = Buffer.from(key);
    this.keyId = createHash('sha256').update('dh-log-key-id/1\n').update(this.#key).digest('hex').slice(0, 16);
  }

  /** `<keyId>:<hex HMAC-SHA256(key, chain)>`, what the store writes in a row's `mac` column. */
  mac(chain: string): string {
    return `${this.keyId}:${this.#hmac(chain)}`;
  }

  check(chain: string, mac: string | null): MacVerdict {
    if (mac === null) return { ok: false, reason: 'missing' };
    const match = /^([0-9a-f]{16}):([0-9a-f]{64})$/.exec(mac);
    if (match === null) return { ok: false, reason: 'malformed' };
    if (match[1] !== this.keyId) return { ok: false, reason: 'other-key', keyId: match[1] ?? '' };
    const expected = Buffer.from(this.#hmac(chain), 'hex');
    return timingSafeEqual(expected, Buffer.from(match[2] ?? '', 'hex'))
      ? { ok: true }
      : { ok: false, reason: 'mismatch' };
  }

  /** Only the id: the key never reaches a log line, a JSON dump or an error. */
  toJSON(): { keyId: string } {
    return { keyId: this.keyId };
  }

  [inspect.custom](): string {
    return `LogKey { keyId: '${this.keyId}' }`;
  }

  #hmac(chain: string): string {
    return createHmac('sha256', this.#key).update(chain, 'utf8').digest('hex');
  }
}

/** Decodes a base64 (or base64url) key; the error names `name` and never shows the value. */
export function parseLogKey(value: string, name = LOG_KEY_ENV): LogKey {
  const trimmed = value.trim();
  const hint = 'generate one with `openssl rand -base64 32`';
  const bytes = /^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)
    ? Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64')
    : undefined;
  // Node's decoder skips what it cannot read, so a value that does not re-encode to itself is not base64.
  const canonical = bytes?.toString('base64').replace(/=+$/, '');
  if (bytes === undefined || canonical !== trimmed.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '')) {
    throw new LogKeyError(LOG_KEY_INVALID, `${name} is not base64: it must be 32 bytes in base64 (${hint})`, {
      variable: name,
    });
  }
  if (bytes.length !== KEY_BYTES) {
    throw new LogKeyError(
      LOG_KEY_INVALID,
      `${name} decodes to ${bytes.length} bytes; it must be 32 bytes in base64 (${hint})`,
      { variable: name, bytes: bytes.length },
    );
  }
  return new LogKey(bytes);
}

/** The key `DH_LOG_KEY` names, or undefined when it is unset or blank (rows then carry no MAC). */
export function logKeyFromEnv(env: NodeJS.ProcessEnv = process.env): LogKey | undefined {
  const value = env[LOG_KEY_ENV];
  return value === undefined || value.trim() === '' ? undefined : parseLogKey(value);
}
