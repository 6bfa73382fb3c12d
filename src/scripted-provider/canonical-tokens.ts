// The canonical tokenization of a request's input and a reply's output, with the real o200k_base BPE
// (gpt-tokenizer, encoding bundled: no download). Every segment (the tool list, then each message in
// order) is encoded on its own and the token arrays are concatenated, so a request that appends
// messages to an earlier one extends its token sequence exactly: the prefix property the cache
// simulation relies on. Counts are the simulator's, not any provider's exact billing.
import { createHash } from 'node:crypto';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import {
  contentText,
  type ChatCompletionRequest,
  type WireContentPart,
  type WireMessage,
} from './chat-completion-request.js';

const NO_SPECIALS = { disallowedSpecial: new Set<string>() };
const memo = new Map<string, readonly number[]>();
const MEMO_LIMIT = 20_000;

/** Tokens of `text` (o200k_base; special-token spellings are encoded as plain text). */
export function tokenize(text: string): readonly number[] {
  const hit = memo.get(text);
  if (hit !== undefined) return hit;
  const tokens = Object.freeze(encode(text, NO_SPECIALS));
  if (memo.size >= MEMO_LIMIT) memo.clear();
  memo.set(text, tokens);
  return tokens;
}

/** Number of o200k_base tokens of `text`. */
export function tokenCount(text: string): number {
  return tokenize(text).length;
}

/** An assistant turn as the canonical rendering sees it (from a wire message or a scripted reply). */
export interface AssistantTurn {
  readonly content: string;
  readonly reasoning?: string | undefined;
  readonly toolCalls: readonly { readonly id: string; readonly name: string; readonly arguments: string }[];
}

function partText(part: WireContentPart): string {
  if (part.type === 'text') return part.text ?? '';
  if (part.type === 'image_url' && part.image_url) {
    // An image counts as a marker plus a digest of its URL, not the (possibly huge) data URL itself.
    return `<|image|>${createHash('sha256').update(part.image_url.url).digest('hex').slice(0, 16)}`;
  }
  return `<|${part.type}|>`;
}

function contentOf(content: string | readonly WireContentPart[] | null | undefined): string {
  if (content === null || content === undefined) return '';
  return typeof content === 'string' ? content : content.map(partText).join('');
}

/**
 * Renders an assistant turn. Reasoning is part of the context only when the turn made tool calls:
 * DeepSeek's thinking-mode guide (https://api-docs.deepseek.com/guides/thinking_mode) says reasoning
 * of a turn without tool calls is not concatenated into later context (and is ignored if sent), while
 * reasoning of a turn with tool calls is.
 */
export function renderAssistant(turn: AssistantTurn): string {
  let out = '<|assistant|>\n';
  if (turn.toolCalls.length > 0 && turn.reasoning) out += `<|reasoning|>\n${turn.reasoning}\n<|/reasoning|>\n`;
  out += turn.content;
  for (const call of turn.toolCalls) out += `\n<|tool_call|>${call.id} ${call.name}\n${call.arguments}`;
  return out;
}

export function renderMessage(message: WireMessage): string {
  switch (message.role) {
    case 'assistant':
      return renderAssistant({
        content: contentOf(message.content),
        reasoning: message.reasoning_content ?? undefined,
        toolCalls: (message.tool_calls ?? []).map((call) => ({
          id: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
        })),
      });
    case 'tool':
      return `<|tool|>${message.tool_call_id}\n${contentOf(message.content)}`;
    default:
      return `<|${message.role}|>\n${contentOf(message.content)}`;
  }
}

/** The tokenized input of one request and the cache partition it belongs to. */
export interface CanonicalInput {
  /** Partition key: model, tool list and system prompt (a change in any of them is a different cache). */
  readonly key: string;
  readonly tokens: readonly number[];
}

/** The leading system/developer messages' text: the "system" part of the cache key. */
export function systemPrompt(request: Pick<ChatCompletionRequest, 'messages'>): string {
  const parts: string[] = [];
  for (const message of request.messages) {
    if (message.role !== 'system' && message.role !== 'developer') break;
    parts.push(contentText(message.content));
  }
  return parts.join('\n');
}

/** Canonical tokens of a request: the tool list (as sent) first, then every message in order. */
export function canonicalInput(request: Pick<ChatCompletionRequest, 'model' | 'messages' | 'tools'>): CanonicalInput {
  const tools = request.tools && request.tools.length > 0 ? `<|tools|>\n${JSON.stringify(request.tools)}` : '';
  const tokens: number[] = [];
  // Appended token by token: spreading a long array into push() can overflow the call stack.
  if (tools !== '') for (const token of tokenize(tools)) tokens.push(token);
  for (const message of request.messages) {
    for (const token of tokenize(renderMessage(message))) tokens.push(token);
  }
  const key = createHash('sha256')
    .update(JSON.stringify([request.model, tools, systemPrompt(request)]))
    .digest('hex');
  return { key, tokens };
}

/** Canonical tokens a reply appends to the context (what the next request repeats when it echoes it). */
export function canonicalOutput(turn: AssistantTurn): readonly number[] {
  return tokenize(renderAssistant(turn));
}

/** Tokens the provider reports as `completion_tokens` and `reasoning_tokens` for a reply. */
export function completionTokenCounts(turn: AssistantTurn): { completion: number; reasoning: number } {
  const reasoning = turn.reasoning ? tokenCount(turn.reasoning) : 0;
  const calls = turn.toolCalls.reduce((sum, call) => sum + tokenCount(call.name) + tokenCount(call.arguments), 0);
  return { completion: reasoning + tokenCount(turn.content) + calls, reasoning };
}
