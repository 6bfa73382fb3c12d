// The tool policy's two log events: a call's verdict, and a rule a remembered decision added to the session.
import { z } from 'zod';
import { envelope, Id, Step, Turn } from './event-fields.js';
import { PolicyOutcome, PolicyRule } from './policy-rule.js';

/** What decided a tool call's policy verdict. */
export const VerdictSource = z.enum(['rule', 'session-rule', 'default', 'evaluator']);
export type VerdictSource = z.infer<typeof VerdictSource>;

/**
 * The tool policy's verdict on one call, logged before the call is answered, asked about or run: what
 * decided (a rule of the policy file, a rule remembered in this session, no rule, an evaluator), its
 * version, and a digest of the inputs it judged, so an audit can re-judge it with the rules of today.
 */
export const PolicyVerdict = z.strictObject({
  ...envelope,
  type: z.literal('policy/verdict'),
  turn: Turn,
  step: Step,
  callId: Id,
  name: z.string().min(1),
  outcome: PolicyOutcome,
  by: VerdictSource,
  /** The rule's id (`rule`, `session-rule`). */
  rule: z.string().min(1).max(100).optional(),
  /** The evaluator plugin's name (`evaluator`). */
  evaluator: z.string().min(1).max(200).optional(),
  /** The policy file's version (or its digest), or the evaluator's version. */
  version: z.string().min(1).max(200),
  /** `sha256:<hex>` of the judged inputs: tool name, arguments and the resolved paths. */
  inputs: z.string().min(1).max(100),
  /** Path arguments and directories as resolved in the workspace (symlinks followed); null: outside or refused. */
  paths: z.record(z.string(), z.string().nullable()).optional(),
  reason: z.string().max(2000).optional(),
  /** An evaluator's scores (e.g. a classifier's risk). */
  scores: z.record(z.string(), z.number()).optional(),
  /** Why an evaluator's answer became `ask` (it failed, timed out, answered nonsense or was unsure). */
  escalated: z.string().max(2000).optional(),
});

/** "Approve (or deny) and remember": a rule that answers later asks of this session, logged with the decision. */
export const PolicyRuleAdded = z.strictObject({
  ...envelope,
  type: z.literal('policy/rule'),
  turn: Turn,
  step: Step,
  /** The call whose decision added it. */
  callId: Id,
  rule: PolicyRule,
  by: z.string().max(200).optional(),
});
