// A small server-sent events reader over fetch (EventSource cannot send the bearer header), and a resilient
// one on top that reconnects after a dropped stream with Last-Event-ID, as EventSource itself would.
import { authHeaders } from './api-client.js';
import { noteTokenRequired } from './token-store.js';

export interface SseMessage {
  readonly event: string;
  readonly data: string;
  /** The message's `id:` field (its stream position), when it has one. */
  readonly id?: string;
}

/** Splits SSE text into messages; returns the unfinished tail to prepend to the next chunk. */
export function parseSse(buffer: string, emit: (message: SseMessage) => void): string {
  const blocks = buffer.replace(/\r\n?/g, '\n').split('\n\n');
  const rest = blocks.pop() ?? '';
  for (const block of blocks) {
    let event = 'message';
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      // The spec ignores an id with a NUL in it.
      else if (field === 'id' && !value.includes('\0')) id = value;
    }
    if (data.length > 0) emit({ event, data: data.join('\n'), ...(id !== undefined ? { id } : {}) });
  }
  return rest;
}

/** Reads `path` as SSE until `signal` aborts or the server ends the stream; resumes after `lastEventId`. */
export async function readSse(
  path: string,
  signal: AbortSignal,
  emit: (message: SseMessage) => void,
  lastEventId?: string | null,
): Promise<void> {
  const headers: Record<string, string> = { ...authHeaders(), accept: 'text/event-stream' };
  if (lastEventId != null && lastEventId !== '') headers['last-event-id'] = lastEventId;
  const response = await fetch(`.${path}`, { headers, signal, cache: 'no-store' });
  if (response.status === 401) noteTokenRequired();
  if (!response.ok || response.body === null) throw new Error(`live stream: HTTP ${response.status}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer = parseSse(buffer + value, emit);
  }
}

export interface FollowOptions {
  /** Where to resume on the first connection (a stored position); null: from the start. */
  readonly lastEventId?: string | null;
  /** A connection ended or failed (error: null when the server closed it); the next try is in `retryMs`. */
  readonly onDrop?: (error: string | null, retryMs: number) => void;
  readonly minRetryMs?: number;
  readonly maxRetryMs?: number;
}

/**
 * Reads `path` as SSE until `signal` aborts, reconnecting whenever the stream ends or fails, with the last
 * id received as Last-Event-ID so nothing is lost or repeated. The wait doubles up to `maxRetryMs`, and
 * starts over once a connection delivered something (the server was back).
 */
export async function followSse(
  path: string,
  signal: AbortSignal,
  emit: (message: SseMessage) => void,
  options: FollowOptions = {},
): Promise<void> {
  const minMs = options.minRetryMs ?? 250;
  const maxMs = options.maxRetryMs ?? 5_000;
  let lastEventId = options.lastEventId ?? null;
  let retryMs = minMs;
  while (!signal.aborted) {
    let received = false;
    let error: string | null = null;
    try {
      await readSse(
        path,
        signal,
        (message) => {
          received = true;
          if (message.id !== undefined) lastEventId = message.id;
          emit(message);
        },
        lastEventId,
      );
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
    }
    if (signal.aborted) return;
    if (received) retryMs = minMs;
    options.onDrop?.(error, retryMs);
    await sleep(retryMs, signal);
    retryMs = Math.min(retryMs * 2, maxMs);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
