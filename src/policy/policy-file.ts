// The tool policy file (`$DH_HOME/policy.json` or DH_POLICY): ordered rules and the evaluator's bounds,
// validated whole at load into one INVALID_CONFIG line naming the file, and the line and column or the path.
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { canonicalJson, sha256Digest } from '../core/canonical-json.js';
import { DhError } from '../core/errors.js';
import { PolicyRule } from '../core/policy-rule.js';
import { describeIssue, formatPath, parseConfigJson } from '../config/config-file-problems.js';
import { LlmEvaluatorConfig } from './llm-evaluator-config.js';
import { firstPatternProblem } from './policy-patterns.js';

const CODE = 'INVALID_CONFIG';
/** Ids of rules remembered in a session (see session-rules.ts); a file's rule may not take one. */
export const SESSION_RULE_PREFIX = 'session:';

const EvaluatorBounds = z.strictObject({
  /** An evaluator slower than this is treated as failed: the call asks. */
  timeoutMs: z.int().min(100).max(600_000).default(10_000),
  /** An evaluator's allow or deny below this confidence (0..1) asks instead. */
  minConfidence: z.number().min(0).max(1).default(0.5),
  /** A model that reviews what the rules leave open (asked after the plugins' evaluators). */
  llm: LlmEvaluatorConfig.optional(),
});

const PolicyFileShape = z
  .strictObject({
    /** Named in every verdict; default: a digest of the rules, so any edit is a new version. */
    version: z.string().min(1).max(200).optional(),
    rules: z.array(PolicyRule).max(1000),
    evaluator: EvaluatorBounds.optional(),
  })
  .superRefine((file, ctx) => {
    const seen = new Set<string>();
    for (const [i, rule] of file.rules.entries()) {
      if (rule.id.startsWith(SESSION_RULE_PREFIX))
        ctx.addIssue({
          code: 'custom',
          path: ['rules', i, 'id'],
          message: `"${SESSION_RULE_PREFIX}" ids are the session's`,
        });
      if (seen.has(rule.id))
        ctx.addIssue({ code: 'custom', path: ['rules', i, 'id'], message: `id "${rule.id}" repeats` });
      seen.add(rule.id);
    }
  });

export interface Policy {
  /** Where it was read from (for messages). */
  readonly file: string;
  readonly version: string;
  readonly rules: readonly PolicyRule[];
  readonly evaluator: {
    readonly timeoutMs: number;
    readonly minConfidence: number;
    readonly llm?: LlmEvaluatorConfig | undefined;
  };
}

/** Parses a policy file's text; a problem throws INVALID_CONFIG naming `file` and where. */
export function parsePolicy(text: string, file: string): Policy {
  const fail = (problem: string, path = ''): never => {
    throw new DhError(CODE, `invalid tool policy in ${file}: ${path === '' ? '' : `${path}: `}${problem}`, {
      file,
      path,
    });
  };
  const read = parseConfigJson(text);
  if (!read.ok) return fail(read.problem);
  const { json } = read;
  const parsed = PolicyFileShape.safeParse(json, { reportInput: true });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue === undefined) return fail('expected a JSON object');
    return fail(describeIssue(issue), formatPath(issue.path));
  }
  const { rules } = parsed.data;
  // Refused at load, not met at the first call: a pattern RE2 cannot run would leave its rule unable to decide.
  const unrunnable = firstPatternProblem(rules);
  if (unrunnable !== undefined)
    return fail(`rule "${unrunnable.rule}": ${unrunnable.problem}`, formatPath(unrunnable.path));
  return {
    file,
    version: parsed.data.version ?? `rules-${sha256Digest(canonicalJson(rules)).slice(7, 19)}`,
    rules,
    evaluator: parsed.data.evaluator ?? EvaluatorBounds.parse({}),
  };
}

/** The worker's policy: DH_POLICY names a file (it must exist), else `$DH_HOME/policy.json` if there is one. */
export async function loadPolicy(options: { home: string; env: NodeJS.ProcessEnv }): Promise<Policy | undefined> {
  const named = options.env.DH_POLICY;
  if (named === '') throw new DhError(CODE, 'invalid tool policy: DH_POLICY is set but empty');
  const file = named !== undefined ? resolve(named) : join(options.home, 'policy.json');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // Only the default file is optional: a file named on purpose that is not there is a mistake.
    if (code === 'ENOENT' && named === undefined) return undefined;
    throw new DhError(
      CODE,
      `invalid tool policy in ${file}: ${code === 'ENOENT' ? 'no such file (named by DH_POLICY)' : `cannot read it (${code ?? 'error'})`}`,
      { file },
    );
  }
  return parsePolicy(text, file);
}
