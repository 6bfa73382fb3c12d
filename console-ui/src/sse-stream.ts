// A small server-sent events reader over fetch: EventSource cannot send the bearer header.
import { authHeaders } from './api-client.js';

export interface SseMessage {
  readonly event: string;
  readonly data: string;
}

/** Splits SSE text into messages; returns the unfinished tail to prepend to the next chunk. */
export function parseSse(buffer: string, emit: (message: SseMessage) => void): string {
  const blocks = buffer.replace(/\r\n?/g, '\n').split('\n\n');
  const rest = blocks.pop() ?? '';
  for (const block of blocks) {
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length > 0) emit({ event, data: data.join('\n') });
  }
  return rest;
}

/** Reads `path` as SSE until `signal` aborts or the server ends the stream. */
export async function readSse(path: string, signal: AbortSignal, emit: (message: SseMessage) => void): Promise<void> {
  const response = await fetch(`.${path}`, { headers: { ...authHeaders(), accept: 'text/event-stream' }, signal });
  if (!response.ok || response.body === null) throw new Error(`live stream: HTTP ${response.status}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer = parseSse(buffer + value, emit);
  }
}
