// Test helpers for the console API: a console server started in-process over a harness (its store, its
// Temporal client, an in-process delta channel the worker's live-stream plugin publishes to), fetch
// wrappers, and an SSE reader.
import { SessionClient } from '../../src/client/session-client.js';
import type { ConsoleDeps } from '../../src/console/console-app.js';
import { startConsoleServer, type ConsoleServer } from '../../src/console/console-server.js';
import type { DeltaChannel } from '../../src/streaming/delta-channel.js';
import type { Harness } from '../helpers/session-harness.js';

export interface ConsoleOptions {
  /** The agent catalog GET /api/agents lists (default: none). */
  readonly agents?: ConsoleDeps['agents'];
  readonly host?: string;
  readonly token?: string | null;
  readonly uiDir?: string;
}

export function startTestConsole(
  h: Harness,
  channel: DeltaChannel,
  options: ConsoleOptions = {},
): Promise<ConsoleServer> {
  return startConsoleServer({
    store: h.store,
    ...(options.agents !== undefined ? { agents: options.agents } : {}),
    channel,
    sessions: new SessionClient(h.client, { taskQueue: h.taskQueue, timeoutMs: 10_000 }),
    derive: { profile: h.profile },
    readAttachment: (ref) => h.attachments.get(ref),
    uiDir: options.uiDir ?? '/nonexistent-console-ui',
    host: options.host ?? '127.0.0.1',
    port: 0,
    token: options.token ?? null,
    live: { pollMs: 50, statusEveryMs: 200, heartbeatMs: 300 },
  });
}

export interface ApiAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly text: string;
  readonly headers: Headers;
}

export async function call(base: string, path: string, init: RequestInit = {}): Promise<ApiAnswer> {
  const response = await fetch(new URL(path, base), init);
  const text = await response.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  return { status: response.status, body, text, headers: response.headers };
}

export function post(
  base: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<ApiAnswer> {
  return call(base, path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

export interface SseMessage {
  readonly event: string;
  readonly data: unknown;
}

/**
 * Reads an SSE stream until `done` holds for the messages so far (or the deadline), then aborts it.
 * Returns the messages and the comment lines (heartbeats) seen.
 */
export async function readSse(
  url: string,
  done: (messages: readonly SseMessage[]) => boolean,
  options: { headers?: Record<string, string>; timeoutMs?: number; onOpen?: () => Promise<void> } = {},
): Promise<{ messages: SseMessage[]; comments: number; contentType: string | null }> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), options.timeoutMs ?? 20_000);
  const messages: SseMessage[] = [];
  let comments = 0;
  const response = await fetch(url, { headers: options.headers ?? {}, signal: abort.signal });
  const contentType = response.headers.get('content-type');
  await options.onOpen?.();
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    while (reader !== undefined && !done(messages)) {
      const chunk = await reader.read();
      if (chunk.done) break;
      buffer += decoder.decode(chunk.value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (block.startsWith(':')) {
          comments++;
          continue;
        }
        const event = /^event: ?(.*)$/m.exec(block)?.[1] ?? 'message';
        const data = block
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.replace(/^data: ?/, ''))
          .join('\n');
        // A block without data (the stream's `retry:` line) dispatches nothing, as in EventSource.
        if (!/^data:/m.test(block)) continue;
        messages.push({ event, data: JSON.parse(data) as unknown });
      }
    }
  } catch (error) {
    if (!abort.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  return { messages, comments, contentType };
}
