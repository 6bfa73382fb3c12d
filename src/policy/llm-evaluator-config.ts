// The policy file's `evaluator.llm`: which OpenAI-compatible model reviews the calls the rules leave open,
// and how it is told to answer in JSON (see llm-policy-evaluator.ts).
import { z } from 'zod';

/** How the endpoint is told to answer in JSON: each server family reads a different form. */
export const LlmResponseFormat = z.enum(['json_object', 'json_schema', 'json_object_with_schema']);

export const LlmEvaluatorConfig = z.strictObject({
  /** The OpenAI-compatible base URL, e.g. `https://api.deepseek.com` or `http://127.0.0.1:8080/v1`. */
  baseUrl: z.url({ protocol: /^https?$/ }),
  model: z.string().min(1).max(200),
  /** The environment variable holding the API key (never the key itself: the file is not a secret). */
  apiKeyEnv: z
    .string()
    .regex(/^[A-Z_][A-Z0-9_]*$/, 'an environment variable name')
    .optional(),
  /**
   * `json_object` (DeepSeek, OpenAI), `json_schema` (OpenAI, llama.cpp's own server) or
   * `json_object_with_schema` (llama-cpp-python, which constrains its output by the schema given so).
   */
  responseFormat: LlmResponseFormat.default('json_object'),
  /** What this operator allows and forbids, in words; appended to the reviewer's instructions. */
  instructions: z.string().max(8000).optional(),
  maxTokens: z.int().min(16).max(4000).default(300),
});
export type LlmEvaluatorConfig = z.infer<typeof LlmEvaluatorConfig>;
