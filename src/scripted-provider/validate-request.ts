// Rejects the request bodies real providers reject, with their status and an OpenAI-style error body:
// bad UTF-8 or JSON, missing/empty messages, unknown model (404), tool calls not answered right after
// the assistant message that made them, tool messages answering no pending call, and DeepSeek
// thinking-mode history without the `reasoning_content` it must carry. Pure: bytes in, verdict out.
import { apiError, type ApiError } from './api-error.js';
import { ChatCompletionRequest } from '../providers/chat-completion-request.js';
import { jsonPath, type ReasoningPassBack } from './script.js';

export type Validation =
  | { readonly ok: true; readonly request: ChatCompletionRequest; readonly thinking: boolean }
  | { readonly ok: false; readonly error: ApiError };

export interface ValidateOptions {
  readonly models: readonly string[];
  readonly reasoningPassBack: ReasoningPassBack;
}

const THINKING_MODE_DOC = 'https://api-docs.deepseek.com/guides/thinking_mode#tool-calls';

function reject(error: ApiError): Validation {
  return { ok: false, error };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function validateRequest(body: Uint8Array, options: ValidateOptions): Validation {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return reject(apiError(400, 'The request body is not valid UTF-8.', { code: 'invalid_encoding' }));
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return reject(
      apiError(400, `We could not parse the JSON body of your request (${detail}).`, { code: 'invalid_json' }),
    );
  }
  if (!isRecord(value)) {
    return reject(apiError(400, 'The request body must be a JSON object.', { code: 'invalid_request_body' }));
  }
  if (typeof value.model !== 'string' || value.model === '') {
    return reject(apiError(400, "Missing required parameter: 'model'.", { code: 'missing_model', param: 'model' }));
  }
  if (value.messages === undefined || value.messages === null) {
    return reject(
      apiError(400, "Missing required parameter: 'messages'.", { code: 'missing_messages', param: 'messages' }),
    );
  }
  if (!Array.isArray(value.messages) || value.messages.length === 0) {
    return reject(
      apiError(400, "Invalid 'messages': expected a non-empty array of messages.", {
        code: 'missing_messages',
        param: 'messages',
      }),
    );
  }
  if (!options.models.includes(value.model)) {
    return reject(
      apiError(404, `The model \`${value.model}\` does not exist or you do not have access to it.`, {
        code: 'model_not_found',
        param: 'model',
      }),
    );
  }
  const parsed = ChatCompletionRequest.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = jsonPath(issue?.path ?? []);
    return reject(
      apiError(400, `Invalid request body at ${path}: ${issue?.message ?? 'invalid'}`, {
        code: 'invalid_request_body',
        param: path.slice(2) || null,
      }),
    );
  }
  const request = parsed.data;
  const pairing = checkToolPairing(request);
  if (pairing) return reject(pairing);
  const thinking = request.model === 'deepseek-reasoner' || request.thinking?.type === 'enabled';
  if (thinking) {
    const missing = checkReasoningPassBack(request, options.reasoningPassBack);
    if (missing) return reject(missing);
  }
  return { ok: true, request, thinking };
}

/**
 * Chat-completions pairing (OpenAI and DeepSeek both enforce it): an assistant message with
 * `tool_calls` must be followed immediately by `tool` messages answering each call id, and a `tool`
 * message must answer a call of that preceding assistant message that is still unanswered.
 */
function checkToolPairing(request: ChatCompletionRequest): ApiError | undefined {
  let pending: { index: number; ids: Set<string> } | undefined;
  const unanswered = (p: { index: number; ids: Set<string> }): ApiError =>
    apiError(
      400,
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. ` +
        `The following tool_call_ids of messages[${p.index}] did not have response messages: ${[...p.ids].join(', ')}`,
      { code: 'tool_calls_unanswered', param: `messages[${p.index}]` },
    );
  for (const [index, message] of request.messages.entries()) {
    if (message.role === 'tool') {
      if (pending === undefined) {
        return apiError(
          400,
          `Invalid 'messages[${index}]': messages with role 'tool' must be a response to a preceding message with 'tool_calls'.`,
          { code: 'invalid_tool_message', param: `messages[${index}]` },
        );
      }
      if (!pending.ids.delete(message.tool_call_id)) {
        return apiError(
          400,
          `Invalid 'messages[${index}]': tool_call_id '${message.tool_call_id}' does not answer a pending tool call of messages[${pending.index}].`,
          { code: 'invalid_tool_message', param: `messages[${index}]` },
        );
      }
      continue;
    }
    if (pending !== undefined && pending.ids.size > 0) return unanswered(pending);
    pending = undefined;
    if (message.role === 'assistant' && message.tool_calls && message.tool_calls.length > 0) {
      const ids = new Set<string>();
      for (const call of message.tool_calls) {
        if (ids.has(call.id)) {
          return apiError(400, `Invalid 'messages[${index}]': duplicate tool call id '${call.id}'.`, {
            code: 'invalid_request_body',
            param: `messages[${index}].tool_calls`,
          });
        }
        ids.add(call.id);
      }
      pending = { index, ids };
    }
  }
  return pending !== undefined && pending.ids.size > 0 ? unanswered(pending) : undefined;
}

/**
 * DeepSeek thinking mode (model `deepseek-reasoner`, or `thinking: {type: "enabled"}`), per
 * https://api-docs.deepseek.com/guides/thinking_mode ("Tool Calls"): between two user messages, when
 * the model made tool calls, the `reasoning_content` of those assistant messages takes part in the
 * context and must be sent back, otherwise the API answers 400 ("Missing `reasoning_content` field in
 * the assistant message at message index N"); reasoning of turns without tool calls is not needed and
 * is ignored. The guide for deepseek-chat/deepseek-reasoner requires it for the current user turn (the
 * tool-call sub-turns after the last user message) and lets clients drop older turns' reasoning:
 * `current-turn`, the default. Later model generations require it in every later request:
 * `all-turns`. Present means a string; an empty string is accepted.
 */
function checkReasoningPassBack(request: ChatCompletionRequest, rule: ReasoningPassBack): ApiError | undefined {
  let lastUser = -1;
  for (const [index, message] of request.messages.entries()) if (message.role === 'user') lastUser = index;
  for (const [index, message] of request.messages.entries()) {
    if (message.role !== 'assistant' || !message.tool_calls || message.tool_calls.length === 0) continue;
    if (rule === 'current-turn' && index < lastUser) continue;
    if (typeof message.reasoning_content !== 'string') {
      return apiError(
        400,
        `Missing \`reasoning_content\` field in the assistant message at message index ${index}. ` +
          `For more information, please refer to ${THINKING_MODE_DOC}`,
        { code: 'missing_reasoning_content', param: `messages[${index}].reasoning_content` },
      );
    }
  }
  return undefined;
}
