// Whether a provider's refusal says "this request does not fit the model's context": by a code or type
// that names it (trusted whatever the HTTP status), else by wording. Each pattern is there for a server
// whose real answer is a fixture in test/providers/fixtures/context-overflow/.
import type { ErrorBodyFacts } from './error-body-facts.js';

/**
 * OpenAI, llama-cpp-python: code `context_length_exceeded`. llama-server (and Ollama, which runs it):
 * type `exceed_context_size_error`, which llama-server sent with HTTP 500 for a while (llama.cpp#15780).
 */
const OVERFLOW_CODES: ReadonlySet<string> = new Set(['context_length_exceeded', 'exceed_context_size_error']);

const OVERFLOW_WORDING: readonly RegExp[] = [
  // OpenAI, DeepSeek, vLLM, llama-cpp-python: "This model's maximum context length is N tokens. ..."
  /maximum context length/i,
  /context[ _]length[ _]exceeded/i,
  // llama-server: "request (N tokens) exceeds the available context size (M tokens), try increasing it"
  /exceeds? the available context size/i,
  /larger than the max context size/i,
  // LM Studio: "The number of tokens to keep from the initial prompt is greater than the context length"
  /greater than the context length/i,
  // LM Studio: "Trying to keep the first N tokens when context the overflows. ..."
  /when context (the )?overflows/i,
  // LM Studio 0.4: "Input does not fit in context length. ..."
  /does not fit in (the )?context/i,
  // OpenAI GPT-5: "Input tokens exceed the configured limit of N tokens. Your messages resulted in ..."
  /input tokens exceed the configured limit/i,
  // Older phrasings kept from before (llama-cpp-python's own "exceed context window of N", and others).
  /context window|too many tokens|prompt is too long/i,
];

/** `code` when a code or type names the overflow, `wording` when only the message says so. */
export function contextOverflowEvidence(facts: ErrorBodyFacts): 'code' | 'wording' | undefined {
  if (facts.code !== undefined && OVERFLOW_CODES.has(facts.code)) return 'code';
  if (facts.type !== undefined && OVERFLOW_CODES.has(facts.type)) return 'code';
  const message = facts.message;
  if (message !== undefined && OVERFLOW_WORDING.some((pattern) => pattern.test(message))) return 'wording';
  return undefined;
}
