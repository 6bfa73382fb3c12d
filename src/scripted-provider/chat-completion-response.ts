// The response shapes the scripted provider sends: `chat.completion`, `chat.completion.chunk`, usage
// and error bodies, in the chat-completions wire format (strict, so tests can check every field).
// Streaming rules followed (OpenAI API reference, `stream_options.include_usage`,
// https://platform.openai.com/docs/api-reference/chat/create): when set, one extra chunk with an empty
// `choices` array carries the usage right before `data: [DONE]`, and every other chunk carries
// `usage: null`; when unset no chunk has a `usage` field.
import { z } from 'zod';

const count = z.number().int().nonnegative();

export const Usage = z.strictObject({
  prompt_tokens: count,
  completion_tokens: count,
  total_tokens: count,
  /** DeepSeek: input tokens served from the context cache / computed afresh. */
  prompt_cache_hit_tokens: count.optional(),
  prompt_cache_miss_tokens: count.optional(),
  /** OpenAI: `cached_tokens` of the prompt. */
  prompt_tokens_details: z.strictObject({ cached_tokens: count.optional() }).optional(),
  completion_tokens_details: z.strictObject({ reasoning_tokens: count.optional() }).optional(),
});
export type Usage = z.infer<typeof Usage>;

export const ResponseToolCall = z.strictObject({
  id: z.string(),
  type: z.literal('function'),
  function: z.strictObject({ name: z.string(), arguments: z.string() }),
});
export type ResponseToolCall = z.infer<typeof ResponseToolCall>;

export const ChatCompletion = z.strictObject({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: z.number().int(),
  model: z.string(),
  system_fingerprint: z.string(),
  choices: z.array(
    z.strictObject({
      index: z.number().int(),
      message: z.strictObject({
        role: z.literal('assistant'),
        content: z.string().nullable(),
        /** Always null (a scripted reply never refuses); the `openai` package types it as required. */
        refusal: z.null(),
        reasoning_content: z.string().optional(),
        tool_calls: z.array(ResponseToolCall).optional(),
      }),
      logprobs: z.null(),
      finish_reason: z.string(),
    }),
  ),
  usage: Usage.optional(),
});
export type ChatCompletion = z.infer<typeof ChatCompletion>;

export const ToolCallDelta = z.strictObject({
  index: z.number().int(),
  id: z.string().optional(),
  type: z.literal('function').optional(),
  function: z.strictObject({ name: z.string().optional(), arguments: z.string().optional() }),
});
export type ToolCallDelta = z.infer<typeof ToolCallDelta>;

export const ChunkDelta = z.strictObject({
  role: z.literal('assistant').optional(),
  content: z.string().nullable().optional(),
  reasoning_content: z.string().optional(),
  tool_calls: z.array(ToolCallDelta).optional(),
});
export type ChunkDelta = z.infer<typeof ChunkDelta>;

export const ChatCompletionChunk = z.strictObject({
  id: z.string(),
  object: z.literal('chat.completion.chunk'),
  created: z.number().int(),
  model: z.string(),
  system_fingerprint: z.string(),
  choices: z.array(
    z.strictObject({
      index: z.number().int(),
      delta: ChunkDelta,
      logprobs: z.null(),
      finish_reason: z.string().nullable(),
    }),
  ),
  usage: Usage.nullable().optional(),
});
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunk>;

export const ErrorBody = z.strictObject({
  error: z.strictObject({
    message: z.string(),
    type: z.string(),
    param: z.string().nullable(),
    code: z.string().nullable(),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

export const ModelList = z.strictObject({
  object: z.literal('list'),
  data: z.array(
    z.strictObject({
      id: z.string(),
      object: z.literal('model'),
      created: z.number().int(),
      owned_by: z.string(),
      /** vLLM's field for the model's context window (the scripted provider reports it when its script says). */
      max_model_len: z.number().int().positive().optional(),
    }),
  ),
});
export type ModelList = z.infer<typeof ModelList>;
