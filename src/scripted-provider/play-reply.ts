// Writing answers onto the HTTP response: JSON bodies, error answers and recorded real answers, and a
// scripted reply played as a stream of SSE chunks or one completion, with its delays and the faults that
// play out on a 200 (hang, disconnect, malformed SSE, empty answer).
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiError } from './api-error.js';
import type { ChatCompletionChunk, Usage } from './chat-completion-response.js';
import { completionBody, emptyChunk, streamChunks, type ResponseMeta } from './render-reply.js';
import type { Fault, Reply } from './script.js';
import type { StreamHolds } from './stream-holds.js';

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
};

const sse = (chunk: ChatCompletionChunk): string => `data: ${JSON.stringify(chunk)}\n\n`;

/** Writes and waits until the bytes are handed to the socket (so a later destroy cannot drop them). */
function write(res: ServerResponse, data: string): Promise<void> {
  return new Promise((resolve, reject) => {
    res.write(data, (error) => (error ? reject(error) : resolve()));
  });
}

/** A scripted delay; rejects (AbortError) once the response closes or the provider shuts down. */
export async function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms > 0) await sleep(ms, undefined, { signal });
  else if (signal.aborted) throw signal.reason;
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** A complete JSON answer. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** An error answer, with the request id and the error's own headers (e.g. `retry-after`). */
export function sendError(res: ServerResponse, error: ApiError, requestId: string): void {
  sendJson(res, error.status, error.body, { 'x-request-id': requestId, ...error.headers });
}

/** A recorded real answer, replayed as it was: its status, its headers and its body. */
export function sendRecorded(
  res: ServerResponse,
  answer: Extract<Fault, { kind: 'recorded' }>,
  requestId: string,
): void {
  const raw = typeof answer.body === 'string';
  res.writeHead(answer.status, {
    'content-type': raw ? 'text/plain; charset=utf-8' : 'application/json',
    'x-request-id': requestId,
    ...answer.headers,
  });
  res.end(raw ? answer.body : JSON.stringify(answer.body));
}

/** Plays a reply (or a 200-level fault) onto the response. */
export async function playReply(
  res: ServerResponse,
  reply: Reply,
  meta: ResponseMeta,
  usage: Usage,
  stream: boolean,
  signal: AbortSignal,
  requestId: string,
  holds?: StreamHolds,
): Promise<void> {
  const fault = reply.fault;
  const headers = stream ? SSE_HEADERS : { 'content-type': 'application/json' };
  if (fault?.kind === 'disconnect' && !stream) {
    res.socket?.destroy();
    return;
  }
  if (fault?.kind === 'closed') {
    res.writeHead(200, { ...headers, 'x-request-id': requestId });
    res.end();
    return;
  }
  if (fault?.kind === 'hang') {
    res.writeHead(200, { ...headers, 'x-request-id': requestId });
    res.flushHeaders();
    const timer = fault.keepAlive
      ? setInterval(() => {
          // A comment line in SSE; leading whitespace (legal before JSON) otherwise.
          res.write(stream ? ': keep-alive\n\n' : ' ');
        }, fault.keepAliveIntervalMs)
      : undefined;
    try {
      await untilAborted(signal);
    } finally {
      clearInterval(timer);
    }
    res.destroy();
    return;
  }
  if (!stream) {
    if (fault?.kind === 'malformed-sse') {
      res.writeHead(200, { ...headers, 'x-request-id': requestId });
      res.end(`{"id":"${meta.id}","object":"chat.completion","choices":[{"index":0,"message":{"role":"assist`);
      return;
    }
    const empty = fault?.kind === 'empty';
    return sendJson(res, 200, completionBody(reply, meta, empty ? undefined : usage, empty), {
      'x-request-id': requestId,
    });
  }

  res.writeHead(200, { ...headers, 'x-request-id': requestId });
  res.flushHeaders();
  if (fault?.kind === 'empty') {
    await write(res, sse(emptyChunk(meta)));
    res.end('data: [DONE]\n\n');
    return;
  }
  const chunks = streamChunks(reply, meta, usage);
  if (fault?.kind === 'malformed-sse') {
    const first = chunks[0];
    if (first) await write(res, sse(first));
    await pause(reply.chunkDelayMs, signal);
    res.end(
      `data: {"id":"${meta.id}","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"unterminated\n\n`,
    );
    return;
  }
  const limit = fault?.kind === 'disconnect' ? fault.afterChunks : Number.POSITIVE_INFINITY;
  for (const [i, chunk] of chunks.entries()) {
    if (i >= limit) break;
    if (reply.hold !== undefined && i === reply.hold.afterChunks) await holds?.wait(reply.hold.key, signal);
    if (i > 0) await pause(reply.chunkDelayMs, signal);
    await write(res, sse(chunk));
  }
  if (fault?.kind === 'disconnect') {
    res.socket?.destroy();
    return;
  }
  res.end('data: [DONE]\n\n');
}
