// The canonical tokenization of a request's input and a reply's output, with the real o200k_base BPE
// (gpt-tokenizer, encoding bundled: no download). Every segment (the tool list, then each message in
// order) is encoded on its own and the token arrays are concatenated, so a request that appends
// messages to an earlier one extends its token sequence exactly: the prefix property the cache
// simulation relies on. Counts are the simulator's, not any provider's exact billing.
//
// BPE merging one pre-token (the pieces the o200k split pattern cuts text into before merging) is
// quadratic in its length in gpt-tokenizer, and a run of one letter, of letters without a capital, of
// punctuation or of whitespace is a single pre-token however long it is: 80,000 'a's took 2 s or more,
// 262,144 of them 30 s to minutes. So a pre-token longer than MAX_PRETOKEN_CHARS is encoded in pieces
// of that size (linear overall); all other text is encoded exactly as gpt-tokenizer encodes it.
import { createHash } from 'node:crypto';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';
import {
  contentText,
  type ChatCompletionRequest,
  type WireContentPart,
  type WireMessage,
} from './chat-completion-request.js';

const NO_SPECIALS = { disallowedSpecial: new Set<string>() };
const memo = new Map<string, readonly number[]>();
const MEMO_LIMIT = 20_000;

/**
 * Longest pre-token (UTF-16 code units) encoded whole. A longer one is encoded in pieces of this size:
 * each piece costs a few milliseconds, and a cut changes the count by about one token at most (by none
 * for a run of 'a' or '-': o200k's longest tokens for those runs are 8 and 64 characters long).
 */
export const MAX_PRETOKEN_CHARS = 1024;
/** gpt-tokenizer's own o200k split pattern (a copy: `matchAll` must not share its `lastIndex`). */
const PRETOKEN = new RegExp(O200K_TOKEN_SPLIT_REGEX.source, O200K_TOKEN_SPLIT_REGEX.flags);

function append(out: number[], tokens: readonly number[]): void {
  for (const token of tokens) out.push(token);
}

/** Cuts `text` into pieces of at most `size` code units, never inside a surrogate pair. */
function cut(text: string, size: number): string[] {
  const pieces: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + size, text.length);
    const code = text.charCodeAt(end - 1);
    if (end < text.length && end - start > 1 && code >= 0xd800 && code <= 0xdbff) end--;
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces;
}

/** Whitespace other than a line break, as the split pattern's `\s` sees it. */
const BLANK = /^[^\S\r\n]$/;
const SPACE = /^\s/;

/**
 * Tokens of `span`, a run of whole pre-tokens that `next` (a pre-token) follows in the text, exactly
 * as gpt-tokenizer tokenizes them in the whole text. Re-splitting a run of whole pre-tokens yields the
 * same pre-tokens (the split pattern looks neither behind nor, except in `\s+(?!\S)`, ahead), with
 * one exception: blanks at the end of the run, which in the whole text are followed by a non-space,
 * so the last one is a pre-token of its own there (`\s+(?!\S)` takes all but the last, `\s+` the last),
 * while at the end of the run `\s+(?!\S)` would take them all. So that last blank goes on its own.
 */
function encodeSpan(out: number[], span: string, next: string): void {
  if (span === '') return;
  if (next !== '' && !SPACE.test(next) && BLANK.test(span.slice(-1))) {
    if (span.length > 1) append(out, encode(span.slice(0, -1), NO_SPECIALS));
    append(out, encode(span.slice(-1), NO_SPECIALS));
  } else {
    append(out, encode(span, NO_SPECIALS));
  }
}

/**
 * o200k_base tokens of `text`: exactly `encode(text)` unless a pre-token is longer than
 * MAX_PRETOKEN_CHARS, and then exactly that outside such pre-tokens, which are encoded in pieces.
 */
function encodeLinear(text: string): number[] {
  if (text.length <= MAX_PRETOKEN_CHARS) return encode(text, NO_SPECIALS);
  let out: number[] | undefined;
  let done = 0;
  for (const match of text.matchAll(PRETOKEN)) {
    const pretoken = match[0];
    if (pretoken.length <= MAX_PRETOKEN_CHARS) continue;
    out ??= [];
    encodeSpan(out, text.slice(done, match.index), pretoken);
    for (const piece of cut(pretoken, MAX_PRETOKEN_CHARS)) append(out, encode(piece, NO_SPECIALS));
    done = match.index + pretoken.length;
  }
  if (out === undefined) return encode(text, NO_SPECIALS);
  encodeSpan(out, text.slice(done), '');
  return out;
}

/**
 * Tokens of `text` (o200k_base; special-token spellings are encoded as plain text; a pre-token longer
 * than MAX_PRETOKEN_CHARS is encoded in pieces, see encodeLinear).
 */
export function tokenize(text: string): readonly number[] {
  const hit = memo.get(text);
  if (hit !== undefined) return hit;
  const tokens = Object.freeze(encodeLinear(text));
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
