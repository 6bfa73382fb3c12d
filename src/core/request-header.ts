// The request header: everything in a model request that is not conversation history. It is logged
// as a full snapshot (`request/header`), and the header in force is simply the latest snapshot.
import { z } from 'zod';
import { Message } from './messages.js';
import { HeaderAgent } from './agent-fields.js';

const JsonObjectSchema = z.record(z.string(), z.json());

export const ToolSchema = z.strictObject({
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'tool names are 1-64 of [a-zA-Z0-9_-]'),
  description: z.string(),
  /** JSON Schema of the arguments object. */
  parameters: JsonObjectSchema,
});
export type ToolSchema = z.infer<typeof ToolSchema>;

/**
 * Everything that shapes the wire body besides messages. Adapters may not add anything that is not
 * here: a knob that is not recorded cannot be re-derived by the audit.
 */
export const CallConfig = z.strictObject({
  /** Profile name (`deepseek`, `openai`, or a generic profile's name). */
  provider: z.string().min(1),
  model: z.string().min(1),
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().min(0).max(1).optional(),
  maxTokens: z.number().int().positive().optional(),
  stop: z.array(z.string()).max(16).optional(),
  reasoningEffort: z.enum(['minimal', 'low', 'medium', 'high']).optional(),
  /** Thinking mode, recorded explicitly because some providers turn it on by default. */
  thinking: z.enum(['enabled', 'disabled']).optional(),
  /**
   * `false`: one non-streamed response instead of a stream (for servers that cannot stream a feature,
   * e.g. llama-cpp-python's automatic tool choice); absent or `true`: streamed.
   */
  stream: z.boolean().optional(),
  /**
   * What an assistant message without text (one that only calls tools) sends as its `content`: absent,
   * `null` as the OpenAI API defines it; `empty-string`, `""` for servers that refuse null there
   * (llama-cpp-python answers 500). Generic endpoints record `empty-string`.
   */
  nullContentAs: z.literal('empty-string').optional(),
  /** `stream_options.include_usage` on the wire (streamed requests only; a whole response carries usage). */
  includeUsage: z.boolean().optional(),
  /** Extra top-level wire-body fields for a generic profile, recorded so the body stays derivable. */
  extraBody: JsonObjectSchema.optional(),
});
export type CallConfig = z.infer<typeof CallConfig>;

export const RequestHeader = z.strictObject({
  config: CallConfig,
  /** The rendered system prompt. */
  system: z.string().optional(),
  /** Tool schemas in their recorded (stable) order. */
  tools: z.array(ToolSchema).optional(),
  /** Opening messages composed once per loop instance (the session prefix), placed before history. */
  prefix: z.array(Message).optional(),
  /**
   * The model's context window in tokens (input + output) as the worker knew it when it composed this
   * header: configured, discovered from the server, or the profile's. Not part of the wire body; context
   * pressure and the audit read it from here instead of asking a later worker. Absent in headers written
   * before it was recorded (readers then fall back to the profile).
   */
  contextWindow: z.number().int().positive().optional(),
  /**
   * The agent (name, version) this header was composed from, with the session's overrides applied (format 2).
   * Not part of the wire body. Absent in headers of version-1 logs.
   */
  agent: HeaderAgent.optional(),
});
export type RequestHeader = z.infer<typeof RequestHeader>;

export const HeaderReason = z.enum(['initial', 'resume', 'change']);
export type HeaderReason = z.infer<typeof HeaderReason>;
