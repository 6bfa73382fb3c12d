// Canonical JSON (object keys sorted by UTF-16 code units as in RFC 8785; arrays keep their order) and
// the sha256 digest helpers. Written here rather than imported because it is on the gate's hot path and
// must run in the workflow sandbox; numbers use JSON.stringify, which already matches RFC 8785.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

/** Serializes a lossless JSON value canonically. Callers validate losslessness first. */
export function canonicalJson(value: unknown): string {
  const parts: string[] = [];
  write(value, parts);
  return parts.join('');
}

function write(value: unknown, out: string[]): void {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`${typeof value} has no JSON representation`);
    out.push(text);
    return;
  }
  if (Array.isArray(value)) {
    out.push('[');
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.push(',');
      write(value[i], out);
    }
    out.push(']');
    return;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record)
    .filter((k) => record[k] !== undefined)
    .sort();
  out.push('{');
  keys.forEach((key, i) => {
    if (i > 0) out.push(',');
    out.push(JSON.stringify(key), ':');
    write(record[key], out);
  });
  out.push('}');
}

/** `sha256:<hex>` of a UTF-8 string. */
export function sha256Digest(text: string): string {
  return `sha256:${bytesToHex(sha256(utf8ToBytes(text)))}`;
}

/** `sha256:<hex>` of raw bytes. */
export function sha256DigestBytes(bytes: Uint8Array): string {
  return `sha256:${bytesToHex(sha256(bytes))}`;
}

/** Digest of a value's canonical JSON. */
export function digestOf(value: unknown): string {
  return sha256Digest(canonicalJson(value));
}
