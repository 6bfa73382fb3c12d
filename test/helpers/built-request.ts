// Hand-built BuiltRequest values for adapter tests: deep-frozen, like the ones buildRequest returns.
import type { BuiltRequest } from '../../src/core/build-request.js';
import { sha256DigestBytes } from '../../src/core/canonical-json.js';
import { deepFreeze } from '../../src/core/deep-freeze.js';
import type { AttachmentRef, Message } from '../../src/core/messages.js';
import type { CallConfig, ToolSchema } from '../../src/core/request-header.js';

export interface BuiltRequestInput {
  /** Merged over the defaults; a key set to undefined removes the default (e.g. `thinking: undefined`). */
  config?: { [K in keyof CallConfig]?: CallConfig[K] | undefined };
  system?: string;
  tools?: ToolSchema[];
  messages?: Message[];
  sessionId?: string;
  turn?: number;
  step?: number;
}

/** A deep-frozen request; defaults: DeepSeek V4 Flash with thinking disabled, one user message. */
export function builtRequest(input: BuiltRequestInput = {}): BuiltRequest {
  const merged: Record<string, unknown> = {
    provider: 'deepseek',
    model: 'deepseek-v4-flash',
    thinking: 'disabled',
    ...input.config,
  };
  for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key];
  const config = merged as CallConfig;
  const request: BuiltRequest = {
    sessionId: input.sessionId ?? 'session-test',
    turn: input.turn ?? 1,
    step: input.step ?? 1,
    config,
    ...(input.system !== undefined ? { system: input.system } : {}),
    tools: input.tools ?? [],
    messages: input.messages ?? [{ role: 'user', content: 'Hello' }],
  };
  deepFreeze(request);
  return request;
}

export const weatherTool: ToolSchema = {
  name: 'get_weather',
  description: 'Current weather for a city.',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
    required: ['city'],
  },
};

export const clockTool: ToolSchema = {
  name: 'get_time',
  description: 'Current time in a time zone.',
  parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] },
};

/** A tiny attachment (not a real image; adapters never decode it) and its ref. */
export function attachment(bytes: Uint8Array, mediaType: AttachmentRef['mediaType'] = 'image/png'): AttachmentRef {
  return { id: sha256DigestBytes(bytes), mediaType, bytes: bytes.byteLength };
}

/** Eight bytes standing in for an image (the adapter only base64-encodes them). */
export const GOLDEN_IMAGE_BYTES = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * The fixed request behind test/providers/fixtures/golden-wire-body.json: every wire feature at once
 * (system, tools, image part, assistant tool calls with reasoning, tool results, sampling, extraBody).
 */
export function goldenRequest(): BuiltRequest {
  const image = attachment(GOLDEN_IMAGE_BYTES);
  return builtRequest({
    sessionId: 'golden',
    turn: 2,
    step: 3,
    config: {
      provider: 'deepseek',
      model: 'deepseek-flash',
      temperature: 0.7,
      topP: 0.95,
      maxTokens: 512,
      stop: ['</done>'],
      reasoningEffort: 'high',
      thinking: 'enabled',
      includeUsage: true,
      extraBody: { response_format: { type: 'text' }, user: 'dh-golden' },
    },
    system: 'You are a careful assistant. Ünïcödé and "quotes" stay as they are.',
    tools: [weatherTool, clockTool],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture?' },
          { type: 'image', attachment: image },
        ],
      },
      { role: 'assistant', content: 'A PNG signature.', reasoning: 'The bytes start with 0x89 PNG.' },
      { role: 'user', content: 'Weather in Paris and the time there?' },
      {
        role: 'assistant',
        content: null,
        reasoning: 'Two independent lookups: call both tools.',
        toolCalls: [
          { id: 'call_1', name: 'get_weather', arguments: '{"city": "Paris","unit":"c"}' },
          { id: 'call_2', name: 'get_time', arguments: '{"zone":"Europe/Paris"}' },
        ],
      },
      { role: 'tool', toolCallId: 'call_1', content: '18°C, cloudy' },
      { role: 'tool', toolCallId: 'call_2', content: '14:05' },
    ],
  });
}
