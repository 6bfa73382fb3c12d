// What an error answer says, whichever shape the server used: OpenAI's `{error: {message, type, code}}`,
// a bare `{error: "text"}` (LM Studio), the top-level `{message, type, code}` of older vLLM, FastAPI's
// `{detail}`, or plain text. The openai SDK keeps only the `error` member, so the raw body is read too.

export interface ErrorBodyFacts {
  readonly message?: string;
  /** The provider's code; numeric codes (llama-server and vLLM repeat the HTTP status) as text. */
  readonly code?: string;
  readonly type?: string;
}

/** Enough of a body to classify it and quote it; the rest of a long answer is dropped. */
const MAX_MESSAGE_CHARS = 2_000;

/**
 * Facts from what the SDK kept (`APIError.error`) first, then from the raw body the guarded fetch read
 * (only for a non-2xx answer). Either may be missing; unreadable parts give no facts, never an error.
 */
export function errorBodyFacts(sdkError: unknown, rawBody?: string): ErrorBodyFacts {
  const kept = factsOf(sdkError);
  const raw = rawBody === undefined ? {} : rawFacts(rawBody);
  const message = kept.message ?? raw.message;
  const code = kept.code ?? raw.code;
  const type = kept.type ?? raw.type;
  return {
    ...(message !== undefined ? { message } : {}),
    ...(code !== undefined ? { code } : {}),
    ...(type !== undefined ? { type } : {}),
  };
}

function rawFacts(body: string): ErrorBodyFacts {
  const text = body.trim();
  if (text === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { message: text.slice(0, MAX_MESSAGE_CHARS) };
  }
  if (isRecord(parsed) && parsed.error !== undefined && parsed.error !== null) return factsOf(parsed.error);
  return factsOf(parsed);
}

function factsOf(value: unknown): ErrorBodyFacts {
  if (typeof value === 'string') return value === '' ? {} : { message: value.slice(0, MAX_MESSAGE_CHARS) };
  if (!isRecord(value)) return {};
  const message = [value.message, value.detail, value.msg].find((m): m is string => typeof m === 'string');
  const code = typeof value.code === 'string' || typeof value.code === 'number' ? String(value.code) : undefined;
  const type = typeof value.type === 'string' ? value.type : undefined;
  return {
    ...(message !== undefined ? { message: message.slice(0, MAX_MESSAGE_CHARS) } : {}),
    ...(code !== undefined ? { code } : {}),
    ...(type !== undefined ? { type } : {}),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
