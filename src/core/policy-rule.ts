// One tool-policy rule: which tool calls it matches (tool name, glob or `mcp__<server>`, and predicates on
// the call's arguments) and what it decides. Shared by the policy file and the log's remembered rules.
import { z } from 'zod';

/** Any JSON value (what `equals` / `oneOf` compare a call's argument with). */
export const JsonValueSchema: z.ZodType<unknown> = z.lazy(() =>
  z.union([
    z.string(),
    z.number(),
    z.boolean(),
    z.null(),
    z.array(JsonValueSchema),
    z.record(z.string(), JsonValueSchema),
  ]),
);

/** RFC 6901: "" (the whole arguments object) or "/"-separated tokens with `~0` / `~1` escapes. */
const JsonPointer = z
  .string()
  .max(500)
  .refine((p) => p === '' || (p.startsWith('/') && !/~[^01]|~$/.test(p)), {
    message: 'expected a JSON pointer: "" or "/name" (escape "~" as "~0" and "/" as "~1")',
  });

/** The operators an argument predicate may use; exactly one per predicate. */
export const PREDICATE_OPERATORS = ['equals', 'oneOf', 'glob', 'regex', 'prefix', 'inside'] as const;
export type PredicateOperator = (typeof PREDICATE_OPERATORS)[number];

export const ArgumentPredicate = z
  .strictObject({
    /** Where in the call's (JSON) arguments: a JSON pointer. */
    arg: JsonPointer,
    equals: JsonValueSchema.optional(),
    oneOf: z.array(JsonValueSchema).min(1).optional(),
    /** A glob over a string argument (`*` crosses "/"; `?`, `[...]`, `{a,b}`). */
    glob: z.string().min(1).max(500).optional(),
    /** A regular expression that must match the whole string argument (it is anchored for you). */
    regex: z.string().min(1).max(500).optional(),
    prefix: z.string().min(1).max(500).optional(),
    /** A workspace directory: the argument, as a path, resolves (symlinks followed) inside it. */
    inside: z.string().min(1).max(500).optional(),
  })
  .superRefine((predicate, ctx) => {
    const used = PREDICATE_OPERATORS.filter((op) => predicate[op] !== undefined);
    if (used.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message:
          used.length === 0
            ? `needs one of ${PREDICATE_OPERATORS.join(', ')}`
            : `takes one operator, not ${used.join(' and ')}`,
      });
    }
    if (predicate.regex !== undefined) {
      try {
        new RegExp(predicate.regex, 'u');
      } catch (error) {
        ctx.addIssue({
          code: 'custom',
          path: ['regex'],
          message: `not a valid regular expression (${error instanceof Error ? error.message : String(error)})`,
        });
      }
    }
  });
export type ArgumentPredicate = z.infer<typeof ArgumentPredicate>;

export const PolicyOutcome = z.enum(['allow', 'deny', 'ask']);
export type PolicyOutcome = z.infer<typeof PolicyOutcome>;

/** A tool pattern: an exact name, a glob (`mcp__fs__read_*`), `mcp__<server>` (all its tools) or `*`. */
const ToolPattern = z.string().min(1).max(200);

export const PolicyRule = z.strictObject({
  /** Named in every verdict it decides, so an audit can say which rule decided what. */
  id: z.string().min(1).max(100),
  tool: z.union([ToolPattern, z.array(ToolPattern).min(1)]),
  /** Every predicate must hold (none: the rule matches every call of the tool). */
  when: z.array(ArgumentPredicate).max(50).optional(),
  outcome: PolicyOutcome,
  /** Why: the model reads a deny's reason; an approver reads an ask's. */
  reason: z.string().min(1).max(2000).optional(),
});
export type PolicyRule = z.infer<typeof PolicyRule>;
