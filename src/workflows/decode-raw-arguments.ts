// Decodes the raw arguments of a signal or update (see raw-message-definitions.ts) the way the SDK's
// default converter would, or names why one cannot be decoded, so a poison payload is refused, not thrown.
import type { Payload, RawValue } from '@temporalio/common';
import { defaultPayloadConverter } from '@temporalio/workflow';
import { UNDECRYPTABLE_ENCODING, UNDECRYPTABLE_REASON_METADATA } from '../shared/undecryptable-payload.js';

export type DecodedArguments =
  { readonly ok: true; readonly first: unknown } | { readonly ok: false; readonly problem: string };

/** Longest encoding name quoted in a problem (it is caller-chosen bytes). */
const MAX_QUOTED_CHARS = 100;
const utf8 = new TextDecoder();

/**
 * The first argument's value when every argument decodes (the handlers read only the first, as they
 * did when the SDK decoded them all), else the first problem, naming the argument when it is not the
 * first. Accepted: `json/plain` (exactly what the SDK's default converter made of it before) and
 * `binary/null` (absent). Anything else — another encoding, bytes that are not JSON, the codec's
 * undecryptable marker — is a problem.
 */
export function decodeRawArguments(args: readonly (RawValue | undefined)[]): DecodedArguments {
  let first: unknown;
  for (const [index, arg] of args.entries()) {
    const decoded = decodeOne(arg?.payload);
    if (!decoded.ok) {
      return { ok: false, problem: index === 0 ? decoded.problem : `argument ${index + 1}: ${decoded.problem}` };
    }
    if (index === 0) first = decoded.value;
  }
  return { ok: true, first };
}

function decodeOne(
  payload: Payload | null | undefined,
): { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problem: string } {
  if (payload === null || payload === undefined) return { ok: true, value: undefined };
  const encoding = metadataText(payload, 'encoding');
  if (encoding === 'binary/null') return { ok: true, value: undefined };
  if (encoding === UNDECRYPTABLE_ENCODING) {
    const reason = metadataText(payload, UNDECRYPTABLE_REASON_METADATA) ?? 'no reason given';
    return { ok: false, problem: `payload cannot be decrypted: ${reason}` };
  }
  if (encoding === undefined) return { ok: false, problem: 'payload has no encoding (expected json/plain)' };
  if (encoding !== 'json/plain') return { ok: false, problem: `payload encoding ${quote(encoding)} is not json/plain` };
  try {
    return { ok: true, value: defaultPayloadConverter.fromPayload(payload) };
  } catch {
    return { ok: false, problem: 'payload is not JSON (encoding "json/plain")' };
  }
}

function metadataText(payload: Payload, key: string): string | undefined {
  const bytes = payload.metadata?.[key];
  return bytes === undefined || bytes === null ? undefined : utf8.decode(bytes);
}

function quote(text: string): string {
  return JSON.stringify(text.length > MAX_QUOTED_CHARS ? `${text.slice(0, MAX_QUOTED_CHARS)}…` : text);
}
