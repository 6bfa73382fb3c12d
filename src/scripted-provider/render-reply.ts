// Turns a scripted reply into the wire: the `chat.completion.chunk` sequence of a stream, or one
// `chat.completion` object. Chunk order follows the real APIs: a first chunk with `role: assistant`,
// `reasoning_content` deltas (DeepSeek spelling, `content: null` beside them), `content` deltas,
// `tool_calls` deltas (the first fragment of each call carries `index`, `id`, `type` and
// `function.name`, later fragments only `index` and `function.arguments`), a chunk with an empty delta
// and the `finish_reason`, then the usage chunk (empty `choices`) when `stream_options.include_usage`.
import type { AssistantTurn } from '../providers/canonical-tokens.js';
import type { ChatCompletion, ChatCompletionChunk, ChunkDelta, Usage } from './chat-completion-response.js';
import type { Reply } from './script.js';

export const SYSTEM_FINGERPRINT = 'fp_scripted';
/** `created` of request 0; request n answers with EPOCH + n (deterministic, never the clock). */
export const CREATED_EPOCH_SECONDS = 1_700_000_000;

export interface ResponseMeta {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly includeUsage: boolean;
}

export function responseMeta(index: number, model: string, includeUsage: boolean): ResponseMeta {
  return { id: `chatcmpl-scripted-${index}`, created: CREATED_EPOCH_SECONDS + index, model, includeUsage };
}

/** The assistant turn a reply produces (what a client appends to its history). */
export function replyTurn(reply: Reply): AssistantTurn {
  return {
    content: reply.text ?? '',
    reasoning: reply.reasoning,
    toolCalls: reply.toolCalls ?? [],
  };
}

export function finishReason(reply: Reply): string {
  return reply.finishReason ?? (reply.toolCalls && reply.toolCalls.length > 0 ? 'tool_calls' : 'stop');
}

/** Splits by code points (never inside a surrogate pair) into pieces of `size`. */
export function splitText(text: string, size: number): string[] {
  const points = Array.from(text);
  const pieces: string[] = [];
  for (let i = 0; i < points.length; i += size) pieces.push(points.slice(i, i + size).join(''));
  return pieces;
}

function chunk(meta: ResponseMeta, delta: ChunkDelta, finish: string | null): ChatCompletionChunk {
  const out: ChatCompletionChunk = {
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
  if (meta.includeUsage) out.usage = null;
  return out;
}

/** Every chunk of the stream for `reply`, in order (the `[DONE]` sentinel is the writer's). */
export function streamChunks(reply: Reply, meta: ResponseMeta, usage: Usage): ChatCompletionChunk[] {
  const chunks: ChatCompletionChunk[] = [];
  const reasoning = reply.reasoning ?? '';
  chunks.push(
    chunk(
      meta,
      reasoning !== ''
        ? { role: 'assistant', content: null, reasoning_content: '' }
        : { role: 'assistant', content: '' },
      null,
    ),
  );
  for (const piece of splitText(reasoning, reply.chunkSize)) {
    chunks.push(chunk(meta, { content: null, reasoning_content: piece }, null));
  }
  const pieces = splitText(reply.text ?? '', reply.chunkSize);
  for (const [i, piece] of pieces.entries()) {
    const out = chunk(meta, { content: piece }, null);
    if (reply.usageEveryChunk) out.usage = usageSoFar(usage, (i + 1) / pieces.length);
    chunks.push(out);
  }
  for (const [index, call] of (reply.toolCalls ?? []).entries()) {
    chunks.push(
      chunk(
        meta,
        { tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] },
        null,
      ),
    );
    for (const piece of splitText(call.arguments, reply.chunkSize)) {
      chunks.push(chunk(meta, { tool_calls: [{ index, function: { arguments: piece } }] }, null));
    }
  }
  chunks.push(chunk(meta, {}, finishReason(reply)));
  if (meta.includeUsage) chunks.push(usageChunk(meta, usage));
  return chunks;
}

/** The usage after `share` of the answer's output: the whole prompt, that part of the completion. */
function usageSoFar(usage: Usage, share: number): Usage {
  const completion = Math.max(1, Math.round(usage.completion_tokens * share));
  return { ...usage, completion_tokens: completion, total_tokens: usage.prompt_tokens + completion };
}

function usageChunk(meta: ResponseMeta, usage: Usage): ChatCompletionChunk {
  return {
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [],
    usage,
  };
}

/** A chunk with no choices at all (the `empty` fault). */
export function emptyChunk(meta: ResponseMeta): ChatCompletionChunk {
  const out: ChatCompletionChunk = {
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [],
  };
  if (meta.includeUsage) out.usage = null;
  return out;
}

/** The non-streaming answer. `choices` is empty for the `empty` fault. */
export function completionBody(
  reply: Reply,
  meta: ResponseMeta,
  usage: Usage | undefined,
  empty = false,
): ChatCompletion {
  const message: ChatCompletion['choices'][number]['message'] = {
    role: 'assistant',
    content: reply.text ?? (reply.toolCalls ? null : ''),
    refusal: null,
  };
  if (reply.reasoning !== undefined) message.reasoning_content = reply.reasoning;
  if (reply.toolCalls) {
    message.tool_calls = reply.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  const body: ChatCompletion = {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: empty ? [] : [{ index: 0, message, logprobs: null, finish_reason: finishReason(reply) }],
  };
  if (usage !== undefined) body.usage = usage;
  return body;
}
