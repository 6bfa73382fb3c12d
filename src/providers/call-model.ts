// One model call: BuiltRequest → canonical wire body → guarded fetch → assembled assistant message
// (streamed, or one whole response when the header says `stream: false`).
// The openai SDK does HTTP and SSE parsing only; it never retries (Temporal does) and never chooses bytes
// (the guarded fetch sends exactly the verified body).
import OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParams,
  ChatCompletionCreateParamsStreaming,
} from 'openai/resources/chat/completions';
import type { BuiltRequest } from '../core/build-request.js';
import type { StepCost, Usage } from '../core/events.js';
import type { ToolCall } from '../core/messages.js';
import { createGuardedFetch, type FetchLike } from './guarded-fetch.js';
import { classifyProviderError, ProviderError, ProviderErrorCode } from './provider-error.js';
import type { ProviderProfile } from './provider-profiles.js';
import { normalizeUsage } from './usage.js';
import { toWireBody, type ReadAttachment, type WireBody } from './wire-body.js';

/** One streamed increment, handed to `onDelta` as it arrives (for live display; not the record). */
export type ModelDelta =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'reasoning'; readonly text: string }
  | {
      readonly type: 'tool-call';
      readonly index: number;
      readonly id?: string;
      readonly name?: string;
      /** A fragment of the raw argument string. */
      readonly arguments: string;
    }
  /** Token counts so far, when the provider streams them (most send them once, in the last chunk). */
  | { readonly type: 'usage'; readonly usage: Usage; readonly cost?: StepCost | null };

/** Never sent: the Authorization header it would make is unset (see callModel). */
const NO_KEY_PLACEHOLDER = 'dh-no-api-key';

export interface CallModelInput {
  request: BuiltRequest;
  profile: ProviderProfile;
  /**
   * Used for the Authorization header only; never logged, never part of an error. '' sends no
   * Authorization header at all (a local server that needs no key; see apiKeyFromEnv).
   */
  apiKey: string;
  /** Caller-initiated interrupt: the call returns the partial message with `interrupted: true`. */
  signal?: AbortSignal;
  onDelta?: (delta: ModelDelta) => void;
  readAttachment?: ReadAttachment;
  /** IDLE_STREAM when no `data:` line arrives for this long after the response headers. */
  idleTimeoutMs: number;
  /** TIMEOUT when response headers take longer than this; defaults to `idleTimeoutMs`. */
  timeoutMs?: number;
  /** The body the outbound gate verified; it must equal `toWireBody(request).body` or nothing is sent. */
  verifiedBody?: string;
  /**
   * The wire body the caller already derived from this very (deep-frozen) `request` after the gate passed it:
   * sent as it is, instead of deriving the same bytes a second time. Takes the place of `verifiedBody`.
   */
  derived?: WireBody;
  /** Transport under the guard (defaults to global fetch); for proxies and instrumentation, not for shaping. */
  fetch?: FetchLike;
}

export interface ModelReply {
  content: string | null;
  reasoning?: string;
  /** Complete tool calls only, in index order, with the raw argument strings. */
  toolCalls: ToolCall[];
  finishReason: string | null;
  /** The stream was cut by the caller: content is partial and unfinished tool calls were dropped. */
  interrupted?: true;
}

export interface CallModelResult {
  message: ModelReply;
  usage?: Usage;
  wire: WireBody;
  /** Whether the body reached the network (false when interrupted before sending). */
  sent: boolean;
  /** The answer's headers (the provider's rate-limit facts) and when they arrived (epoch ms). */
  response?: { readonly headers: Headers; readonly at: number };
}

/**
 * Makes the call. Throws a ProviderError (or the DhError toWireBody raised) for every failure, classified
 * once; returns normally for success and for a caller abort. A stream that ends without a finish reason is
 * STREAM_CUT and its partial is discarded: only the caller's interrupt keeps a partial.
 */
export async function callModel(input: CallModelInput): Promise<CallModelResult> {
  const { request, profile, apiKey, signal, onDelta, idleTimeoutMs } = input;
  const wire = input.derived ?? (await toWireBody(request, profile, input.readAttachment));
  if (input.verifiedBody !== undefined && input.verifiedBody !== wire.body) {
    throw new ProviderError(
      ProviderErrorCode.WireBodyMismatch,
      'refused to send: the verified body is not the wire body this request derives',
      { details: { derivedDigest: wire.digest, derivedBytes: wire.bytes } },
    );
  }

  const assembly = new StreamAssembly();
  if (signal?.aborted) return { message: assembly.interrupted(), wire, sent: false };

  const guard = createGuardedFetch({
    verifiedBody: wire.body,
    idleTimeoutMs,
    ...(input.fetch ? { fetch: input.fetch } : {}),
  });
  const client = new OpenAI({
    // The SDK refuses to start without a key; for a keyless endpoint a placeholder satisfies it and the
    // explicit null below (the SDK's documented way to unset a default header) keeps it off the wire.
    apiKey: apiKey === '' ? NO_KEY_PLACEHOLDER : apiKey,
    ...(apiKey === '' ? { defaultHeaders: { Authorization: null } } : {}),
    baseURL: profile.baseURL,
    // Explicit nulls so OPENAI_ORG_ID / OPENAI_PROJECT_ID in the environment never add headers.
    organization: null,
    project: null,
    maxRetries: 0,
    timeout: input.timeoutMs ?? idleTimeoutMs,
    fetch: guard.fetch,
    logLevel: 'off',
  });
  // The SDK re-serializes its params; they are parsed from the canonical body, and the guarded fetch
  // sends the canonical bytes themselves (see guarded-fetch.ts).
  const params = JSON.parse(wire.body) as ChatCompletionCreateParams;
  const options = signal ? { signal } : {};

  let callbackFailure: { error: unknown } | undefined;
  try {
    // A non-streamed response is assembled as one chunk, so both kinds share every rule below.
    const chunks =
      params.stream === false
        ? [asChunk(await client.chat.completions.create(params, options))]
        : await client.chat.completions.create(params as ChatCompletionCreateParamsStreaming, options);
    for await (const chunk of chunks) {
      const deltas = assembly.push(chunk);
      if (!onDelta) continue;
      try {
        for (const delta of deltas) onDelta(delta);
      } catch (error) {
        callbackFailure = { error };
        if (!Array.isArray(chunks)) chunks.controller.abort();
        break;
      }
    }
  } catch (error) {
    if (callbackFailure) throw callbackFailure.error;
    if (signal?.aborted) return { message: assembly.interrupted(), wire, sent: guard.state.sent };
    if (guard.state.refusal) throw guard.state.refusal;
    if (guard.state.idle) throw guard.state.idle;
    throw classifyProviderError(error, {
      secrets: [apiKey],
      ...(guard.state.errorBody !== undefined ? { errorBody: guard.state.errorBody } : {}),
    });
  }
  // A caller's onDelta bug is the caller's: rethrown as is, never disguised as a provider failure.
  if (callbackFailure) throw callbackFailure.error;
  if (guard.state.idle) throw guard.state.idle; // the SDK ends iteration quietly on some aborts

  if (!assembly.finished) {
    if (signal?.aborted) return { message: assembly.interrupted(), wire, sent: guard.state.sent };
    if (!assembly.sawChoice && guard.state.bytesReceived === 0 && profile.emptyStreamIsOverflow === true) {
      throw new ProviderError(
        ProviderErrorCode.ContextLengthExceeded,
        'the server answered 200 and closed the stream without sending anything, which is how ' +
          "llama-cpp-python's server refuses a request longer than its context (n_ctx): taken as a context overflow",
        { status: 200, details: { evidence: 'empty-stream' } },
      );
    }
    if (!assembly.sawChoice) {
      throw new ProviderError(ProviderErrorCode.MalformedResponse, 'the stream ended without any choice', {
        details: { bytesReceived: guard.state.bytesReceived, dataLines: guard.state.dataLines },
      });
    }
    throw new ProviderError(ProviderErrorCode.StreamCut, 'the stream ended before a finish reason; partial discarded', {
      details: { bytesReceived: guard.state.bytesReceived, dataLines: guard.state.dataLines },
    });
  }
  const message = assembly.complete();
  return {
    message,
    ...(assembly.usage ? { usage: assembly.usage } : {}),
    wire,
    sent: true,
    ...(guard.state.responseHeaders && guard.state.responseAt !== undefined
      ? { response: { headers: guard.state.responseHeaders, at: guard.state.responseAt } }
      : {}),
  };
}

/** A whole response as the one chunk that would have streamed it (tool calls indexed by position). */
function asChunk(completion: ChatCompletion): ChatCompletionChunk {
  const choices = Array.isArray(completion.choices) ? completion.choices : [];
  return {
    id: completion.id,
    object: 'chat.completion.chunk',
    created: completion.created,
    model: completion.model,
    ...(completion.usage ? { usage: completion.usage } : {}),
    choices: choices.map((choice) => {
      const message = (choice.message ?? {}) as ChatCompletion.Choice['message'] & { reasoning_content?: unknown };
      const toolCalls = (message.tool_calls ?? []).flatMap((call, index) =>
        call.type === 'function'
          ? [{ index, id: call.id, type: 'function' as const, function: { ...call.function } }]
          : [],
      );
      return {
        index: choice.index,
        finish_reason: choice.finish_reason,
        delta: {
          role: 'assistant' as const,
          ...(typeof message.content === 'string' ? { content: message.content } : {}),
          ...(typeof message.reasoning_content === 'string' ? { reasoning_content: message.reasoning_content } : {}),
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
      };
    }),
  };
}

interface PartialToolCall {
  id: string | undefined;
  name: string | undefined;
  arguments: string;
}

/** Accumulates chunks of choice 0: text, reasoning_content, tool calls by index, finish reason, usage. */
class StreamAssembly {
  finished = false;
  sawChoice = false;
  usage: Usage | undefined;
  private content = '';
  private reasoning = '';
  private finishReason: string | null = null;
  private readonly toolCalls = new Map<number, PartialToolCall>();

  push(chunk: ChatCompletionChunk): ModelDelta[] {
    // The usage chunk (stream_options.include_usage) arrives last, usually with an empty `choices`.
    const out: ModelDelta[] = [];
    if (chunk.usage) {
      this.usage = normalizeUsage(chunk.usage);
      if (this.usage) out.push({ type: 'usage', usage: this.usage });
    }
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    const choice = choices.find((c) => c.index === 0) ?? choices[0];
    if (!choice) return out;
    this.sawChoice = true;
    const delta = (choice.delta ?? {}) as ChatCompletionChunk.Choice.Delta & { reasoning_content?: unknown };
    // DeepSeek streams thinking as `delta.reasoning_content`, a sibling of `content`.
    if (typeof delta.reasoning_content === 'string' && delta.reasoning_content.length > 0) {
      this.reasoning += delta.reasoning_content;
      out.push({ type: 'reasoning', text: delta.reasoning_content });
    }
    if (typeof delta.content === 'string' && delta.content.length > 0) {
      this.content += delta.content;
      out.push({ type: 'text', text: delta.content });
    }
    for (const [position, call] of (delta.tool_calls ?? []).entries()) {
      const index = typeof call.index === 'number' ? call.index : position;
      const slot = this.toolCalls.get(index) ?? { id: undefined, name: undefined, arguments: '' };
      if (typeof call.id === 'string' && call.id.length > 0) slot.id ??= call.id;
      const name = call.function?.name;
      if (typeof name === 'string' && name.length > 0) slot.name ??= name;
      const fragment = call.function?.arguments ?? '';
      slot.arguments += fragment;
      this.toolCalls.set(index, slot);
      out.push({
        type: 'tool-call',
        index,
        ...(typeof call.id === 'string' ? { id: call.id } : {}),
        ...(typeof name === 'string' ? { name } : {}),
        arguments: fragment,
      });
    }
    if (choice.finish_reason) {
      this.finishReason = choice.finish_reason;
      this.finished = true;
    }
    return out;
  }

  complete(): ModelReply {
    const toolCalls: ToolCall[] = [];
    for (const [index, call] of [...this.toolCalls.entries()].sort((a, b) => a[0] - b[0])) {
      if (call.id === undefined || call.name === undefined) {
        throw new ProviderError(
          ProviderErrorCode.MalformedResponse,
          `tool call at index ${index} finished without ${call.id === undefined ? 'an id' : 'a name'}`,
        );
      }
      toolCalls.push({ id: call.id, name: call.name, arguments: call.arguments });
    }
    return {
      content: this.content.length > 0 ? this.content : null,
      ...(this.reasoning.length > 0 ? { reasoning: this.reasoning } : {}),
      toolCalls,
      finishReason: this.finishReason,
    };
  }

  /** The partial reply of an interrupted stream: text and reasoning so far, no tool calls (none finished). */
  interrupted(): ModelReply {
    return {
      content: this.content.length > 0 ? this.content : null,
      ...(this.reasoning.length > 0 ? { reasoning: this.reasoning } : {}),
      toolCalls: [],
      finishReason: null,
      interrupted: true,
    };
  }
}
