// Test helpers for the scripted provider: start one per test (closed when the test ends), post
// chat-completion bodies with fetch, and read SSE streams event by event.
import { onTestFinished } from 'vitest';
import type { ChatCompletionChunk } from '../../src/scripted-provider/chat-completion-response.js';
import type { Script } from '../../src/scripted-provider/script.js';
import {
  startScriptedProvider,
  type ScriptedProvider,
  type StartScriptedProviderOptions,
} from '../../src/scripted-provider/start-scripted-provider.js';

export async function useProvider(
  script: Script | string,
  options: Omit<StartScriptedProviderOptions, 'script'> = {},
): Promise<ScriptedProvider> {
  const provider = await startScriptedProvider({ script, ...options });
  onTestFinished(() => provider.close());
  return provider;
}

export function post(provider: ScriptedProvider, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(`${provider.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test-key', ...init.headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...(init.signal ? { signal: init.signal } : {}),
  });
}

export const user = (content: string) => ({ role: 'user', content }) as const;
export const system = (content: string) => ({ role: 'system', content }) as const;

export interface SseEvent {
  readonly kind: 'data' | 'comment';
  readonly value: string;
}

/** Yields SSE events as they arrive (`data:` payloads and `:` comments). */
export async function* sseEvents(response: Response): AsyncGenerator<SseEvent> {
  if (!response.body) throw new Error('response has no body');
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of response.body) {
    buffer += decoder.decode(bytes as Uint8Array, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of block.split('\n')) {
        if (line.startsWith('data: ')) yield { kind: 'data', value: line.slice(6) };
        else if (line.startsWith(':')) yield { kind: 'comment', value: line.slice(1).trim() };
      }
    }
  }
  if (buffer.trim() !== '') yield { kind: 'data', value: `<<incomplete>>${buffer}` };
}

/** All `data:` payloads of a stream, in order (including the final `[DONE]`). */
export async function readData(response: Response): Promise<string[]> {
  const out: string[] = [];
  for await (const event of sseEvents(response)) if (event.kind === 'data') out.push(event.value);
  return out;
}

/** The chunks of a completed stream (everything before `[DONE]`, which must be last). */
export async function readChunks(response: Response): Promise<ChatCompletionChunk[]> {
  const data = await readData(response);
  if (data.at(-1) !== '[DONE]') throw new Error(`stream did not end with [DONE]: ${data.at(-1)}`);
  return data.slice(0, -1).map((value) => JSON.parse(value) as ChatCompletionChunk);
}
