// The chat-completions request body as the scripted provider and the audit's cache simulation read it. Loose
// objects: unknown knobs (temperature, top_p, ...) are accepted like real providers accept them; only what
// the provider checks or the simulation tokenizes is typed.
import { z } from 'zod';

export const WireContentPart = z.looseObject({
  type: z.string(),
  text: z.string().optional(),
  image_url: z.looseObject({ url: z.string() }).optional(),
});
export type WireContentPart = z.infer<typeof WireContentPart>;

const WireContent = z.union([z.string(), z.array(WireContentPart)]);

export const WireToolCall = z.looseObject({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
});
export type WireToolCall = z.infer<typeof WireToolCall>;

export const WireMessage = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content: WireContent, name: z.string().optional() }),
  z.looseObject({ role: z.literal('developer'), content: WireContent, name: z.string().optional() }),
  z.looseObject({ role: z.literal('user'), content: WireContent, name: z.string().optional() }),
  z.looseObject({
    role: z.literal('assistant'),
    content: WireContent.nullable().optional(),
    reasoning_content: z.string().nullable().optional(),
    tool_calls: z.array(WireToolCall).optional(),
    name: z.string().optional(),
  }),
  z.looseObject({ role: z.literal('tool'), tool_call_id: z.string().min(1), content: WireContent }),
]);
export type WireMessage = z.infer<typeof WireMessage>;

export const WireTool = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.json()).optional(),
  }),
});
export type WireTool = z.infer<typeof WireTool>;

export const ChatCompletionRequest = z.looseObject({
  model: z.string(),
  messages: z.array(WireMessage).min(1),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  tools: z.array(WireTool).optional(),
  /** DeepSeek's thinking switch (`{"thinking": {"type": "enabled"}}`). */
  thinking: z
    .looseObject({ type: z.enum(['enabled', 'disabled']) })
    .nullable()
    .optional(),
});
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

/** The text of a message's content: the string, or its text parts joined. */
export function contentText(content: string | readonly WireContentPart[] | null | undefined): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content
    .filter((part) => part.type === 'text')
    .map((part) => part.text ?? '')
    .join('');
}
