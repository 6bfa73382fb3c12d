// The provider-neutral message shapes a request carries. They follow the chat-completions roles so
// that the wire role of everything is fixed by the log; adapters only change field spelling.
import { z } from 'zod';

export const AttachmentRef = z.strictObject({
  /** `sha256:<hex>` of the bytes; the attachment store verifies it on every read. */
  id: z.string().regex(/^sha256:[0-9a-f]{64}$/, 'attachment id must be sha256:<64 hex>'),
  mediaType: z.enum(['image/png', 'image/jpeg', 'image/gif', 'image/webp']),
  bytes: z.number().int().nonnegative(),
  name: z.string().optional(),
});
export type AttachmentRef = z.infer<typeof AttachmentRef>;

export const ContentPart = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text'), text: z.string() }),
  z.strictObject({ type: z.literal('image'), attachment: AttachmentRef }),
]);
export type ContentPart = z.infer<typeof ContentPart>;

/** User content: plain text, or parts when it carries images. */
export const UserContent = z.union([z.string(), z.array(ContentPart).min(1)]);
export type UserContent = z.infer<typeof UserContent>;

export const ToolCall = z.strictObject({
  id: z.string().min(1),
  name: z.string().min(1),
  /** The raw argument string the model produced, unparsed: parsing belongs to the tool runner. */
  arguments: z.string(),
});
export type ToolCall = z.infer<typeof ToolCall>;

export const UserMessage = z.strictObject({ role: z.literal('user'), content: UserContent });
export const AssistantMessage = z.strictObject({
  role: z.literal('assistant'),
  content: z.string().nullable(),
  reasoning: z.string().optional(),
  toolCalls: z.array(ToolCall).optional(),
});
export const ToolMessage = z.strictObject({
  role: z.literal('tool'),
  toolCallId: z.string().min(1),
  content: z.string(),
});

/** A message of the conversation surface (never `system`: the system prompt lives in the header). */
export const Message = z.discriminatedUnion('role', [UserMessage, AssistantMessage, ToolMessage]);
export type UserMessage = z.infer<typeof UserMessage>;
export type AssistantMessage = z.infer<typeof AssistantMessage>;
export type ToolMessage = z.infer<typeof ToolMessage>;
export type Message = z.infer<typeof Message>;
