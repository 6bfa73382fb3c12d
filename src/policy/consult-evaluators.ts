// The evaluators' say on a call the rules leave to an ask: each is asked in turn, and any failure, doubt or
// ask of theirs keeps the ask; a confident deny denies, and an allow needs every evaluator with an opinion.
// Used by the tool step's judgement and by `dh audit --rejudge --ask-evaluators`.
import { z } from 'zod';
import type { EventDraft } from '../core/index.js';
import type { PolicyEvaluation, PolicyQuestion, ToolCallView } from '../plugins/contracts.js';
import type { Plugin } from '../plugins/plugin.js';
import type { Policy } from './policy-file.js';

export type VerdictDraft = Extract<EventDraft, { type: 'policy/verdict' }>;

export interface PolicyEvaluator {
  readonly name: string;
  readonly version: string;
  readonly evaluate: NonNullable<Plugin['policy']>;
}

const Evaluation = z.strictObject({
  decision: z.enum(['allow', 'deny', 'ask']),
  reason: z.string().max(2000).optional(),
  scores: z.record(z.string().max(100), z.number().finite()).optional(),
  confidence: z.number().min(0).max(1).optional(),
});

/** Evaluators are the plugins with a `policy` hook, in plugin order. */
export function policyEvaluators(plugins: readonly Plugin[]): PolicyEvaluator[] {
  return plugins.flatMap((plugin) => {
    const evaluate = plugin.policy?.bind(plugin);
    return evaluate ? [{ name: plugin.name, version: plugin.policyVersion ?? 'unversioned', evaluate }] : [];
  });
}

/** `fromRules` (an ask by a file rule or the default) as the evaluators leave it. */
export async function consultEvaluators(input: {
  readonly fromRules: VerdictDraft;
  readonly evaluators: readonly PolicyEvaluator[];
  readonly call: ToolCallView;
  readonly question: Omit<PolicyQuestion, 'signal'>;
  readonly policy: Policy;
}): Promise<VerdictDraft> {
  const { fromRules, evaluators, call, question, policy } = input;
  const { outcome: _outcome, by: _by, rule: _rule, version: _version, reason: _reason, ...base } = fromRules;
  const allowed: { evaluator: PolicyEvaluator; answer: PolicyEvaluation }[] = [];
  for (const evaluator of evaluators) {
    const asked = await ask(evaluator, call, question, policy);
    const byEvaluator = { by: 'evaluator' as const, evaluator: evaluator.name, version: evaluator.version };
    if (!asked.ok) return { ...fromRules, ...byEvaluator, outcome: 'ask', escalated: asked.problem };
    const { answer } = asked;
    if (answer === undefined) continue;
    const scores = answer.scores !== undefined ? { scores: { ...answer.scores } } : {};
    const why = answer.reason !== undefined ? { reason: answer.reason } : {};
    if (answer.decision === 'ask') return { ...fromRules, ...byEvaluator, ...why, ...scores, outcome: 'ask' };
    if ((answer.confidence ?? 1) < policy.evaluator.minConfidence) {
      return {
        ...fromRules,
        ...byEvaluator,
        ...scores,
        outcome: 'ask',
        escalated:
          `it would ${answer.decision} with confidence ${answer.confidence ?? 1}, below ${policy.evaluator.minConfidence}${answer.reason !== undefined ? `: ${answer.reason}` : ''}`.slice(
            0,
            2000,
          ),
      };
    }
    if (answer.decision === 'deny')
      return {
        ...base,
        ...byEvaluator,
        ...scores,
        outcome: 'deny',
        reason: answer.reason ?? `${evaluator.name} denies this call`,
      };
    allowed.push({ evaluator, answer });
  }
  // No evaluator had an opinion: the rules' ask stands.
  const last = allowed.at(-1);
  if (last === undefined) return fromRules;
  // Every evaluator with an opinion allowed, sure enough.
  return {
    ...base,
    by: 'evaluator',
    evaluator: allowed.map((a) => a.evaluator.name).join('+'),
    version: allowed.map((a) => a.evaluator.version).join('+'),
    outcome: 'allow',
    reason: last.answer.reason ?? `${last.evaluator.name} allows this call`,
    ...(last.answer.scores !== undefined ? { scores: { ...last.answer.scores } } : {}),
  };
}

type Asked =
  | { readonly ok: true; readonly answer: PolicyEvaluation | undefined }
  | { readonly ok: false; readonly problem: string };

async function ask(
  evaluator: PolicyEvaluator,
  call: ToolCallView,
  question: Omit<Parameters<PolicyEvaluator['evaluate']>[1], 'signal'>,
  policy: Policy,
): Promise<Asked> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Asked>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve({ ok: false, problem: `${evaluator.name} did not answer within ${policy.evaluator.timeoutMs} ms` });
    }, policy.evaluator.timeoutMs);
  });
  const answered = (async (): Promise<Asked> => {
    try {
      const raw: unknown = await evaluator.evaluate({ ...call }, { ...question, signal: controller.signal });
      if (raw === undefined) return { ok: true, answer: undefined };
      const parsed = Evaluation.safeParse(raw);
      if (!parsed.success) return { ok: false, problem: `${evaluator.name} answered something other than a verdict` };
      return { ok: true, answer: parsed.data as PolicyEvaluation };
    } catch (error) {
      return {
        ok: false,
        problem: `${evaluator.name} failed: ${error instanceof Error ? error.message : String(error)}`.slice(0, 2000),
      };
    }
  })();
  try {
    return await Promise.race([answered, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
