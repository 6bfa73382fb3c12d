// The fetch the openai SDK is given: the last gate before the network and the first reader of the reply.
// Outbound it sends exactly the verified canonical body or nothing; inbound it watches raw stream bytes
// for an idle stream that only keep-alives (or nothing) are arriving on.
import { Buffer } from 'node:buffer';
import { canonicalJson, sha256Digest } from '../core/canonical-json.js';
import { ProviderError, ProviderErrorCode } from './provider-error.js';

export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface GuardedFetchOptions {
  /** The canonical body `toWireBody` produced; the only bytes this fetch will ever send. */
  verifiedBody: string;
  /** Abort with IDLE_STREAM when no progress arrives for this long once response headers are in. */
  idleTimeoutMs: number;
  /** The real fetch (defaults to the global one). */
  fetch?: FetchLike;
}

export interface GuardedFetchState {
  /** How the SDK's body compared to the verified one: identical bytes, or equal JSON re-serialized. */
  bodyCheck: 'identical' | 'json-equal' | undefined;
  /** True once the verified body was handed to the network. */
  sent: boolean;
  /** The refusal, when the SDK asked to send anything but the verified body. */
  refusal: ProviderError | undefined;
  /** The watchdog's error, when it fired. */
  idle: ProviderError | undefined;
  bytesReceived: number;
  /** SSE `data:` lines seen (progress). */
  dataLines: number;
  /** SSE comment lines seen (`: keep-alive`): bytes, not progress. */
  commentLines: number;
  /** The body of a non-2xx answer as read (its first ERROR_BODY_BYTES), for the classifier. */
  errorBody: string | undefined;
  /** The answer's headers (rate-limit facts for the fleet limiter), once they arrived, and when. */
  responseHeaders: Headers | undefined;
  responseAt: number | undefined;
}

/** Enough of an error answer to classify and quote it. */
const ERROR_BODY_BYTES = 16 * 1024;

export interface GuardedFetch {
  readonly fetch: FetchLike;
  readonly state: Readonly<GuardedFetchState>;
}

/**
 * Outbound check. The SDK serializes params with JSON.stringify, which follows property insertion order;
 * callModel hands it params parsed from the canonical body, so the bytes usually already match. When they
 * do not (JSON.stringify lists integer-like keys first, for instance), the body is accepted only if it is
 * the same JSON value (its canonical form equals the verified body) and is then REPLACED by the verified
 * body. Either way the bytes on the wire are exactly the verified canonical body; anything else is refused
 * with WIRE_BODY_MISMATCH and the network is never touched. The fetch is single-use: Temporal owns retries.
 *
 * Inbound watchdog. Progress = bytes of an SSE `data:` line. Comment lines (DeepSeek sends `: keep-alive`
 * while a request waits for capacity, per its Rate Limit page, for up to 10 minutes) and blank lines are
 * bytes but not progress, so they do not re-arm the timer. The timer starts when headers arrive (the wait
 * for headers is the SDK's `timeout`, reported as TIMEOUT) and re-arms on each progress; when it fires,
 * the response stream errors with IDLE_STREAM and the connection is aborted. For error responses (non-2xx)
 * any byte counts as progress, and the body is kept in `state.errorBody` for the classifier. The upstream
 * body is read eagerly, so a slow consumer never looks idle.
 */
export function createGuardedFetch(options: GuardedFetchOptions): GuardedFetch {
  const underlying = options.fetch ?? globalThis.fetch;
  const { verifiedBody, idleTimeoutMs } = options;
  const state: GuardedFetchState = {
    bodyCheck: undefined,
    sent: false,
    refusal: undefined,
    idle: undefined,
    bytesReceived: 0,
    dataLines: 0,
    commentLines: 0,
    errorBody: undefined,
    responseHeaders: undefined,
    responseAt: undefined,
  };
  let calls = 0;

  const refuse = (problem: string, sentBody: unknown): never => {
    const facts: Record<string, string | number> = {
      expectedDigest: sha256Digest(verifiedBody),
      expectedBytes: Buffer.byteLength(verifiedBody, 'utf8'),
    };
    if (typeof sentBody === 'string') {
      facts.actualDigest = sha256Digest(sentBody);
      facts.actualBytes = Buffer.byteLength(sentBody, 'utf8');
    }
    state.refusal = new ProviderError(ProviderErrorCode.WireBodyMismatch, `refused to send: ${problem}`, {
      details: facts,
    });
    throw state.refusal;
  };

  const guarded: FetchLike = async (input, init) => {
    calls += 1;
    const sentBody = init?.body;
    if (calls > 1) refuse('the guarded fetch is single-use and already sent its body', sentBody);
    if (typeof sentBody !== 'string') refuse('the outgoing body is not a JSON string', sentBody);
    const text = sentBody as string;
    if (text === verifiedBody) state.bodyCheck = 'identical';
    else if (sameJson(text, verifiedBody)) state.bodyCheck = 'json-equal';
    else refuse('the outgoing body differs from the verified wire body', text);

    const headers = new Headers(init?.headers);
    headers.delete('content-length'); // the body may have been replaced; fetch recomputes it
    const controller = new AbortController();
    const outer = init?.signal;
    if (outer) {
      if (outer.aborted) controller.abort(outer.reason);
      else outer.addEventListener('abort', () => controller.abort(outer.reason), { once: true });
    }
    state.sent = true;
    const response = await underlying(input, { ...init, headers, body: verifiedBody, signal: controller.signal });
    state.responseHeaders = response.headers;
    state.responseAt = Date.now();
    if (!response.body) return response;
    const body = watch(response.body, response.ok, controller, idleTimeoutMs, state);
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  return { fetch: guarded, state };
}

function sameJson(sent: string, verified: string): boolean {
  try {
    return canonicalJson(JSON.parse(sent)) === verified;
  } catch {
    return false;
  }
}

function watch(
  upstream: ReadableStream<Uint8Array>,
  isEventStream: boolean,
  connection: AbortController,
  idleTimeoutMs: number,
  state: GuardedFetchState,
): ReadableStream<Uint8Array> {
  const reader = upstream.getReader();
  const scanner = new SseProgressScanner();
  let timer: NodeJS.Timeout | undefined;
  let finished = false;
  // An error answer is kept as it passes (the SDK reads it whole before it throws), up to a bound.
  const kept: Uint8Array[] = [];
  let keptBytes = 0;
  const keep = (chunk: Uint8Array): void => {
    if (isEventStream || keptBytes >= ERROR_BODY_BYTES) return;
    const part = chunk.subarray(0, ERROR_BODY_BYTES - keptBytes);
    kept.push(part);
    keptBytes += part.byteLength;
    state.errorBody = Buffer.concat(kept).toString('utf8');
  };
  const stop = (): void => {
    finished = true;
    clearTimeout(timer);
  };
  return new ReadableStream<Uint8Array>({
    start(out) {
      const fire = (): void => {
        if (finished) return;
        stop();
        state.idle = new ProviderError(
          ProviderErrorCode.IdleStream,
          `no stream progress for ${idleTimeoutMs} ms (${state.commentLines} keep-alive comment line(s), ` +
            `${state.bytesReceived} byte(s) received)`,
          {
            details: {
              idleTimeoutMs,
              bytesReceived: state.bytesReceived,
              dataLines: state.dataLines,
              commentLines: state.commentLines,
            },
          },
        );
        out.error(state.idle);
        connection.abort(state.idle);
        reader.cancel(state.idle).catch(() => undefined);
      };
      const arm = (): void => {
        clearTimeout(timer);
        timer = setTimeout(fire, idleTimeoutMs);
      };
      arm();
      const pump = async (): Promise<void> => {
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (finished) return;
            if (done) {
              stop();
              out.close();
              return;
            }
            state.bytesReceived += value.byteLength;
            keep(value);
            const progress = isEventStream ? scanner.push(value) : true;
            state.dataLines = scanner.dataLines;
            state.commentLines = scanner.commentLines;
            if (progress) arm();
            out.enqueue(value);
          }
        } catch (error) {
          if (finished) return;
          stop();
          out.error(error);
        }
      };
      void pump();
    },
    cancel(reason) {
      stop();
      return reader.cancel(reason);
    },
  });
}

/**
 * Classifies SSE lines as they stream by, byte by byte (lines may span chunks): a line is `data` once its
 * first five bytes are `data:`, a comment when it starts with `:`. push() reports whether the chunk held
 * any byte of a data line.
 */
export class SseProgressScanner {
  dataLines = 0;
  commentLines = 0;
  private head = '';
  private kind: 'data' | 'comment' | 'other' | undefined;

  push(chunk: Uint8Array): boolean {
    let progress = false;
    for (const byte of chunk) {
      if (byte === 0x0a || byte === 0x0d) {
        if (this.kind === 'comment') this.commentLines += 1;
        this.head = '';
        this.kind = undefined;
        continue;
      }
      if (this.kind === undefined) {
        this.head += String.fromCharCode(byte);
        if (this.head === ':') this.kind = 'comment';
        else if (this.head === 'data:') {
          this.kind = 'data';
          this.dataLines += 1;
        } else if (!'data:'.startsWith(this.head)) this.kind = 'other';
      }
      if (this.kind === 'data') progress = true;
    }
    return progress;
  }
}
