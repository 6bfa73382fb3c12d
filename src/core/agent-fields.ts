// The agent fields of the log: which agent (name and version) a session runs and saw each header from, and the
// per-session overrides of its definition. Pure zod: the workflow, the client and every reader share them.
import { z } from 'zod';

/** 1-63 of a-z, 0-9 and -, starting with a letter (an agent's name, as sessions and the CLI choose it). */
export const AGENT_NAME_PATTERN = /^[a-z][a-z0-9-]{0,62}$/;

/** The worker-wide configuration (DH_MODEL, DH_SYSTEM_PROMPT, …) as an agent: what a session runs without a choice. */
export const DEFAULT_AGENT_NAME = 'default';

export const AgentName = z
  .string()
  .regex(AGENT_NAME_PATTERN, 'an agent name: 1-63 of a-z, 0-9 and -, starting with a letter');

/** An agent as the log records it: its name and the version of its definition. */
export const AgentRef = z.strictObject({ name: AgentName, version: z.string().regex(/^[0-9a-f]{12}$/) });
export type AgentRef = z.infer<typeof AgentRef>;

/** The agent a header was composed from, and the `overridesId` of the session's overrides it applied (none: none). */
export const HeaderAgent = z.strictObject({
  name: AgentName,
  version: z.string().regex(/^[0-9a-f]{12}$/),
  overrides: z.string().min(1).max(200).optional(),
});
export type HeaderAgent = z.infer<typeof HeaderAgent>;

/**
 * One session's changes to its agent's definition, as a whole (the latest logged set is in force; `{}` clears
 * them). They enter the request header at the next step, never during one.
 */
export const AgentOverrides = z.strictObject({
  /** Replaces the agent's instructions. */
  system: z.string().min(1).max(200_000).optional(),
  /** Added after the instructions (or `system`), separated by a blank line. */
  systemAppend: z.string().min(1).max(200_000).optional(),
  /** A model the worker's endpoint serves. */
  model: z.string().min(1).max(200).optional(),
  temperature: z.number().min(0).max(2).optional(),
  maxTokens: z.number().int().positive().max(10_000_000).optional(),
  /** A subset of the agent's tools, by name (the model sees them in the agent's order). */
  tools: z
    .array(z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/))
    .max(256)
    .optional(),
});
export type AgentOverrides = z.infer<typeof AgentOverrides>;
