// The chat-completions wire body of a BuiltRequest: its exact bytes, digest and size. The bytes are a pure
// function of the request (plus attachment bytes, verified by digest); the profile can only refuse.
import { Buffer } from 'node:buffer';
import type { BuiltRequest } from '../core/build-request.js';
import { canonicalJson, sha256Digest, sha256DigestBytes } from '../core/canonical-json.js';
import { DhError, ErrorCode } from '../core/errors.js';
import { findNonLosslessJson, type JsonValue } from '../core/json.js';
import type { AssistantMessage, AttachmentRef, Message, UserContent } from '../core/messages.js';
import type { CallConfig } from '../core/request-header.js';
import { ProviderError, ProviderErrorCode } from './provider-error.js';
import { modelInfo, type ModelInfo, type ProviderProfile } from './provider-profiles.js';

export interface WireBody {
  /** The exact body sent: canonical JSON (keys sorted), UTF-8. */
  readonly body: string;
  /** `sha256:<hex>` of the body's UTF-8 bytes. */
  readonly digest: string;
  /** Byte length of the body's UTF-8 encoding. */
  readonly bytes: number;
}

export type ReadAttachment = (ref: AttachmentRef) => Promise<Uint8Array>;

/**
 * Top-level fields this adapter writes. `extraBody` may not name any of them, whether or not this request
 * sets it: a recorded knob must not be smuggled past its typed, validated spelling.
 */
export const ADAPTER_OWNED_FIELDS: readonly string[] = [
  'model',
  'messages',
  'tools',
  'stream',
  'stream_options',
  'temperature',
  'top_p',
  'max_tokens',
  'stop',
  'reasoning_effort',
  'thinking',
];

/**
 * Builds the wire body. Every refusal (unknown model, images on a text-only model, thinking the profile
 * cannot express, extraBody collisions) happens here, before any attachment is read or any call is made.
 */
export async function toWireBody(
  request: BuiltRequest,
  profile: ProviderProfile,
  readAttachment?: ReadAttachment,
): Promise<WireBody> {
  const config = request.config;
  const model = modelInfo(profile, config.model);
  checkProvider(config, profile);
  checkThinking(config, profile, model);
  checkImages(request.messages, profile, model, readAttachment);
  checkExtraBody(config);

  const images = await loadImages(request.messages, readAttachment);
  const replayReasoning = sendsReasoning(config);

  const messages: JsonValue[] = [];
  if (request.system !== undefined) messages.push({ role: 'system', content: request.system });
  const nullContent = config.nullContentAs === 'empty-string' ? '' : null;
  for (const message of request.messages) messages.push(wireMessage(message, replayReasoning, images, nullContent));

  const body: Record<string, JsonValue> = {
    model: config.model,
    messages,
    stream: config.stream ?? true,
  };
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
  }
  if (config.includeUsage !== undefined && config.stream !== false) {
    body.stream_options = { include_usage: config.includeUsage };
  }
  if (config.temperature !== undefined) body.temperature = config.temperature;
  if (config.topP !== undefined) body.top_p = config.topP;
  if (config.maxTokens !== undefined) body.max_tokens = config.maxTokens;
  if (config.stop !== undefined) body.stop = [...config.stop];
  if (config.reasoningEffort !== undefined) body.reasoning_effort = config.reasoningEffort;
  if (config.thinking !== undefined) body.thinking = { type: config.thinking };
  for (const [key, value] of Object.entries(config.extraBody ?? {})) body[key] = value;

  const problem = findNonLosslessJson(body, 'body');
  if (problem) throw new DhError(ErrorCode.NotLossless, `wire body is not lossless JSON: ${problem}`, { problem });
  const text = canonicalJson(body);
  return { body: text, digest: sha256Digest(text), bytes: Buffer.byteLength(text, 'utf8') };
}

/**
 * The DeepSeek thinking rule. DeepSeek's Thinking Mode guide says: between two user messages, if the model
 * made tool calls, the `reasoning_content` of those assistant messages must be passed back in all later
 * requests (else HTTP 400 "The reasoning_content in the thinking mode must be passed back"); without tool
 * calls it is not needed and the API ignores it when sent.
 *
 * So on a thinking-enabled config we send `reasoning_content` for EVERY assistant message that has
 * reasoning. It is API-correct (required where needed, ignored elsewhere) and prefix-stable: request N+1
 * repeats request N's messages byte for byte and appends. Dropping reasoning from older turns, as the
 * minimal rule would, rewrites earlier messages at each new user turn and breaks the provider's prefix
 * cache (DeepSeek's cache hits only on fully matching prefix units). On any other config reasoning is
 * never sent. The decision reads only the recorded `config.thinking`, never a provider default. A
 * tool-calling assistant message without reasoning gets `reasoning_content: ""` on thinking requests.
 */
export function sendsReasoning(config: Readonly<CallConfig>): boolean {
  return config.thinking === 'enabled';
}

function wireMessage(
  message: Message,
  replayReasoning: boolean,
  images: ReadonlyMap<string, string>,
  nullContent: null | '',
): JsonValue {
  switch (message.role) {
    case 'user':
      return { role: 'user', content: wireUserContent(message.content, images) };
    case 'assistant':
      return wireAssistant(message, replayReasoning, nullContent);
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}

function wireUserContent(content: UserContent, images: ReadonlyMap<string, string>): JsonValue {
  if (typeof content === 'string') return content;
  return content.map((part): JsonValue => {
    if (part.type === 'text') return { type: 'text', text: part.text };
    const url = images.get(part.attachment.id);
    if (url === undefined) throw new Error(`image ${part.attachment.id} was not loaded`); // unreachable
    return { type: 'image_url', image_url: { url } };
  });
}

function wireAssistant(message: AssistantMessage, replayReasoning: boolean, nullContent: null | ''): JsonValue {
  const out: Record<string, JsonValue> = { role: 'assistant', content: message.content ?? nullContent };
  const hasToolCalls = message.toolCalls !== undefined && message.toolCalls.length > 0;
  if (message.toolCalls && hasToolCalls) {
    out.tool_calls = message.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      // The raw argument string exactly as the model produced it: re-serializing parsed arguments would
      // change bytes (and the prefix cache) whenever the model's spacing differs from ours.
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  if (replayReasoning) {
    if (message.reasoning !== undefined) out.reasoning_content = message.reasoning;
    // A tool-calling message without recorded reasoning (made while thinking was off, or the model sent
    // none) still needs the field on a thinking request, or DeepSeek answers 400; an empty string is
    // accepted. Derived from the message and the recorded config only, so it stays a pure function.
    else if (hasToolCalls) out.reasoning_content = '';
  }
  return out;
}

function refuse(problem: string, details: Record<string, string> = {}): never {
  throw new ProviderError(ProviderErrorCode.UnsupportedRequest, problem, { details });
}

function checkProvider(config: Readonly<CallConfig>, profile: ProviderProfile): void {
  if (config.provider !== profile.name) {
    refuse(`request is for provider "${config.provider}" but the profile is "${profile.name}"`, {
      provider: config.provider,
      profile: profile.name,
    });
  }
}

function checkThinking(config: Readonly<CallConfig>, profile: ProviderProfile, model: ModelInfo): void {
  const thinking = config.thinking;
  const facts = { profile: profile.name, model: model.id, thinking: thinking ?? 'unset' };
  if (!profile.thinkingField) {
    if (thinking !== undefined) {
      refuse(
        `profile "${profile.name}" has no thinking field; config.thinking must be unset (got "${thinking}")`,
        facts,
      );
    }
    return;
  }
  switch (model.thinking) {
    case 'none':
      if (thinking === 'enabled')
        refuse(`model "${model.id}" has no thinking mode; config.thinking cannot be "enabled"`, facts);
      return;
    case 'optional':
      return;
    case 'default-on':
      if (thinking === undefined) {
        refuse(
          `model "${model.id}" thinks by default: record config.thinking ("enabled" or "disabled") so the body says which mode answered`,
          facts,
        );
      }
      return;
    case 'always':
      if (thinking !== 'enabled') refuse(`model "${model.id}" always thinks: config.thinking must be "enabled"`, facts);
      return;
  }
}

function checkImages(
  messages: readonly Message[],
  profile: ProviderProfile,
  model: ModelInfo,
  readAttachment: ReadAttachment | undefined,
): void {
  const count = imageRefs(messages).length;
  if (count === 0) return;
  if (!model.vision) {
    refuse(
      `model "${model.id}" of profile "${profile.name}" does not accept images, but the request carries ${count}; ` +
        'use a vision-capable model or drop the images',
      { profile: profile.name, model: model.id },
    );
  }
  if (!readAttachment) refuse(`the request carries ${count} image(s) but no attachment reader was given`);
}

function checkExtraBody(config: Readonly<CallConfig>): void {
  if (!config.extraBody) return;
  const collisions = Object.keys(config.extraBody).filter((key) => ADAPTER_OWNED_FIELDS.includes(key));
  if (collisions.length > 0) {
    refuse(`config.extraBody may not set adapter-owned field(s): ${collisions.join(', ')}`, {
      fields: collisions.join(','),
    });
  }
}

function imageRefs(messages: readonly Message[]): AttachmentRef[] {
  const refs: AttachmentRef[] = [];
  for (const message of messages) {
    if (message.role !== 'user' || typeof message.content === 'string') continue;
    for (const part of message.content) if (part.type === 'image') refs.push(part.attachment);
  }
  return refs;
}

/** Reads each distinct image once, verifies size and digest, and returns its data URL by id. */
async function loadImages(
  messages: readonly Message[],
  readAttachment: ReadAttachment | undefined,
): Promise<ReadonlyMap<string, string>> {
  const urls = new Map<string, string>();
  for (const ref of imageRefs(messages)) {
    if (urls.has(ref.id) || !readAttachment) continue;
    const bytes = await readAttachment(ref);
    const digest = sha256DigestBytes(bytes);
    if (digest !== ref.id || bytes.byteLength !== ref.bytes) {
      throw new DhError(
        ErrorCode.AttachmentCorrupt,
        `attachment ${ref.id} read back as ${bytes.byteLength} bytes with digest ${digest}`,
        { id: ref.id, expectedBytes: ref.bytes, actualBytes: bytes.byteLength, actualDigest: digest },
      );
    }
    urls.set(ref.id, `data:${ref.mediaType};base64,${Buffer.from(bytes).toString('base64')}`);
  }
  return urls;
}
